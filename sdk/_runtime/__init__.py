"""Private parts of :mod:`spindle.runtime`: the custom-metric instruments and where they are recorded."""
