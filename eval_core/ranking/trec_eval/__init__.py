"""trec_eval 10.0 (and 9) exactly: its file readers, every measure family, its output, for `qrelkit trec_eval`."""
