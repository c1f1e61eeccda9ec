"""What the main process does with a measurement: the rules both sides read, the
verdict, the sentences that explain it, and the pure comparisons they rest on."""
