"""The worker processes: the pool, which starts them and carries each job back, the worker, the head
start, and the check for state a case leaves behind. The job records and the process lifetimes,
which the judge, the SavedModel restorer and repro's candidate runner need too, sit below them
(harness/jobs.py, harness/lifetime.py): only the entry side (the command line, harness.run_here)
imports this package."""
