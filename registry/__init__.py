"""benchreg registry: the Django project that stores, compares and reports benchmark runs."""
