"""The one check of a whole-number argument that the package's functions share: an int (numpy's
too), never a bool (True is an int to Python, and `every=True` a mistake), at least `low` and, when
given, at most `high`; a ValueError naming the argument, its value and what was expected."""

import numbers


def is_whole(value):
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def check_whole(name, value, low, high=None, unit=""):
    """``unit``: what the number counts ("steps"), said in the message."""
    if is_whole(value) and value >= low and (high is None or value <= high):
        return int(value)
    what = f"a whole number{' of ' + unit if unit else ''}"
    bounds = f"from {low} to {high}" if high is not None else f"{low} or more"
    raise ValueError(f"{name} {value!r}: expected {what}, {bounds}".replace(f"{what}, from",
                                                                              f"{what} from"))
