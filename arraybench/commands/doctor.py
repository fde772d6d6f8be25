"""``arraybench doctor``: check that timing, synchronisation, precision and the GPU behave here."""

from __future__ import annotations

import argparse

from ..argtypes import csv_list, positive_float


def register(sub: argparse._SubParsersAction) -> None:
    from ..backends import DEVICES, SPECS

    p = sub.add_parser("doctor", help="check that timing (against each library's own timer), sync, precision, "
                                      "memory, clocks and transfers behave on this machine (run it first on a GPU)")
    p.add_argument("--backends", type=csv_list, default=list(SPECS), metavar="LIST",
                   help=f"libraries to check (default: all: {','.join(SPECS)})")
    p.add_argument("--devices", type=csv_list, default=list(DEVICES), metavar="LIST",
                   help=f"devices to check (default: all: {','.join(DEVICES)})")
    p.add_argument("--timeout", type=positive_float, default=120.0, metavar="SECONDS",
                   help="stop one library's checks after this long, its start included (default: 120)")
    p.add_argument("--json", action="store_true", help="one JSON object per check, one a line")
    p.set_defaults(handler=main)


def main(args: argparse.Namespace) -> int:
    from ..backends import DEVICES, SPECS
    from ..executors.probe import configs as doctor_configs, main as doctor
    from ..errors import UsageError, unknown_name

    for kind, given, valid in (("backend", args.backends, SPECS), ("device", args.devices, DEVICES)):
        unknown = [g for g in given if g not in valid]
        if unknown:
            raise UsageError(unknown_name(kind, unknown[0], list(valid)))
        if not given:
            raise UsageError(f"no {kind} selected; valid: {', '.join(valid)}")
    if not doctor_configs(args.backends, args.devices):
        raise UsageError("the selection gives nothing to check (check --backends against --devices)")
    return doctor(list(dict.fromkeys(args.backends)), list(dict.fromkeys(args.devices)), args.timeout,
                  json_lines=args.json)
