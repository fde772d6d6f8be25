"""Numerical helpers both the parent and the workers use (medians, finite differences, the
thresholds that stop measuring). A leaf: imports nothing of arraybench."""
