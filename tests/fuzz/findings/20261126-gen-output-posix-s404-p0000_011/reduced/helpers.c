long fz_extern_helper(long a, long b) { return (a << 1) - b + 11; }
