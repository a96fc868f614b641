/* placeholder */ int ks_backend_placeholder(void); int ks_backend_placeholder(void) { return 0; }
