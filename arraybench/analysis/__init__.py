"""Analysis: pure Python over measurements. Aggregation, intervals, crossovers, roofline
arithmetic, comparison and findings; never imports matplotlib or an array library."""
