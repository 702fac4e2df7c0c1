"""Tests of the rules engine (a package, so test module names cannot clash with other test folders)."""
