"""The activity runtime: the context an activity runs in, its logger, and the state a process-pool activity shares with its worker."""
