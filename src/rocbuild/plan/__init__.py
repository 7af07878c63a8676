"""From a build request and a found host to the Plan: pure, no environment read, no process started."""
