// Tests log nothing unless LOG_LEVEL is set, so failures stay readable.
process.env.LOG_LEVEL ??= "silent";
