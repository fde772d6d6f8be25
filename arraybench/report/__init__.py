"""Reports: everything a person reads, drawn from saved records only (reports never measure)."""
