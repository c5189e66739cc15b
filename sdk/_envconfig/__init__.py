"""Private helpers of :mod:`spindle.envconfig`: the TOML profile file reader."""
