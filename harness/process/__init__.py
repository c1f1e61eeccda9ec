"""The worker processes and what they carry back: the pool, the worker, process
groups and their reaping, the head start, and the check for state a case leaves behind."""
