"""What PyTorch was built with (its BLAS and LAPACK) and which CPU code paths it really runs."""

from __future__ import annotations

from typing import Any

import torch

from .cpu import captured_stdout

__all__ = ["torch_build_linalg", "torch_cpu_kernels"]


def _isa_named(text: str) -> str:
    """The ISA a library's own words name: "AVX-512", "AVX2", "AVX", "SSE4.2" or "generic"."""
    t = text.upper().replace("-", "").replace("_", "")
    return next((name for key, name in (("AVX512", "AVX-512"), ("AVX2", "AVX2"), ("AVX", "AVX"), ("SSE4", "SSE4.2"))
                 if key in t), "generic")


def torch_cpu_kernels() -> dict[str, Any]:
    """The CPU code paths PyTorch really runs, as each library says: ATen's vector ISA
    (``cpu_capability``), MKL's (``mkl_isa``) and oneDNN's (``onednn_isa``), the last two from
    their verbose modes around one tiny call each. Never fails: what cannot be learnt is left out.
    """
    import re

    out: dict[str, Any] = {}
    try:
        out["cpu_capability"] = torch.backends.cpu.get_cpu_capability()
    except Exception:
        pass
    try:
        if torch.backends.mkl.is_available():
            a = torch.ones(64, 64, dtype=torch.float64)

            def gemm() -> None:
                with torch.backends.mkl.verbose(torch.backends.mkl.VERBOSE_ON):
                    torch.mm(a, a)

            m = re.search(r"MKL_VERBOSE (.+?) Product build.*? architecture (.+?), Lnx", captured_stdout(gemm))
            if m:
                path = m.group(2).replace("(R)", "").strip()
                out["mkl_code_path"] = path  # "Intel Architecture processors": the generic path
                out["mkl_isa"] = _isa_named(path)
                out["mkl_version"] = m.group(1).strip()
    except Exception:
        pass
    try:
        if torch.backends.mkldnn.is_available():
            x = torch.ones(8)

            def reorder() -> None:
                with torch.backends.mkldnn.verbose(torch.backends.mkldnn.VERBOSE_ON):
                    x.to_mkldnn()

            m = re.search(r"info,cpu,isa:([^\n]+)", captured_stdout(reorder))
            if m:
                out["onednn_isa"] = m.group(1).strip()
    except Exception:
        pass
    return out


def torch_build_linalg(config: str) -> dict[str, str]:
    """BLAS and LAPACK from ``torch.__config__.show()``: ``BLAS_INFO=mkl, ..., LAPACK_INFO=mkl``.

    torch links its BLAS statically, so threadpoolctl (which lists loaded libraries) cannot see it;
    the build configuration is the only witness. The MKL or OpenBLAS release line, when present,
    goes in ``torch_blas_detail``.
    """
    import re

    out: dict[str, str] = {}
    for key, name in (("BLAS_INFO", "torch_blas"), ("LAPACK_INFO", "torch_lapack")):
        m = re.search(rf"\b{key}=([^,\s]+)", config)
        if m:
            out[name] = m.group(1)
    for line in config.splitlines():
        text = line.strip().lstrip("- ").strip()
        if "Math Kernel Library" in text or text.lower().startswith("openblas"):
            out["torch_blas_detail"] = text
            break
    if "torch_blas" not in out and "Math Kernel Library" in config:
        out["torch_blas"] = "mkl"
    return out
