const char *tiny_archs(void) { return TINY_ARCHS; }
int tiny_add(int a, int b) { return a + b; }
