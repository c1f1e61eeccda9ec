"""What the main process does with a measurement: the verdict (`verdict`), the sentences that
explain it (`explain`), and each job the pool carries back judged and timed (`judging`). The
criteria it judges by, which the measuring side reads as well, are harness.criteria's."""
