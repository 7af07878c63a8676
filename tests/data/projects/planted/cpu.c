int planted_cpu(void) { return 0; }
