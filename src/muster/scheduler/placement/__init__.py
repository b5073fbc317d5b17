"""Where a gang's pods go, and whom it displaces: best fit, topology domains,
inter-pod rules member by member, preemption, and why a gang does not fit."""
