"""Learning from use, build side: the query log read as records and folded into a build's usage evidence."""
