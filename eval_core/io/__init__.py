"""Readers and writers for every file format qrelkit reads or writes, with path:line errors."""
