"""The one seam through which processes start: the runner, process groups, interrupts."""
