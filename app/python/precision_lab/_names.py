"""Module names against the patterns ``watch`` and ``emulate`` take (``modules=``, a recipe's
``{"modules": ...}`` overrides): a pattern that is some module's exact name names that module
alone, since a name may hold ``[``, ``]``, ``*`` or ``?`` (a ModuleDict key), which fnmatch would
read as a class or a wildcard ("a[0]" would match "a0"); any other is a shell-style pattern.
``names``: every name the pattern could name."""

import fnmatch


def name_matches(name, pattern, names):
    if pattern in names:
        return name == pattern
    return fnmatch.fnmatchcase(name, pattern)


def name_or_parent_matches(name, pattern, names):
    """The module itself or a child of it ("attn" covers "attn.out_proj")."""
    if pattern in names or any(n.startswith(pattern + ".") for n in names):
        return name == pattern or name.startswith(pattern + ".")
    return fnmatch.fnmatchcase(name, pattern) or fnmatch.fnmatchcase(name, pattern + ".*")
