"""Full-size reliability scenarios (``make stress``); small versions live in ``tests/reliability``."""
