"""The one choice of modules that ``watch`` and ``emulate`` make from ``modules=``: None (every
candidate), a shell-style name pattern or a list of them (``_names``: an exact name first), or a
filter. A filter takes torchao's order, ``(module, fqn)`` (its ``module_filter_fn``, which the
advisor's torchao export writes); one written for the earlier ``(name, module)`` order still
works, with a DeprecationWarning, when only that order chooses modules or takes the arguments."""

import inspect
import warnings

from ._names import name_matches


def _calls(modules, candidates, swapped):
    """The candidates the filter chooses with the arguments in torchao's order, or (swapped)
    in the earlier one; None where that order raises."""
    try:
        return [c for c in candidates
                if (modules(c[0], c[1]) if swapped else modules(c[1], c[0]))]
    except (TypeError, AttributeError):
        return None


def _first_is_a_name(modules):
    """A filter whose first parameter is annotated str, or named as a name is (name, fqn)."""
    try:
        first = next(iter(inspect.signature(modules).parameters.values()))
    except (TypeError, ValueError, StopIteration):
        return False
    return first.annotation is str or first.name in ("name", "fqn", "module_name")


def choose(owner, candidates, modules, what):
    """(chosen, rule): ``candidates`` [(name, module, ...)] in named_modules() order, the chosen
    ones in that order, and how (None for all, the patterns, "callable NAME") for the record.
    ``owner``: the model's class name; ``what``: the candidates' kind in messages ("with
    parameters", "that emulate can cast"). ValueError/TypeError name the argument."""
    if modules is None:
        return list(candidates), None
    if callable(modules):
        rule = f"callable {getattr(modules, '__qualname__', type(modules).__name__)}"
        chosen = None if _first_is_a_name(modules) else _calls(modules, candidates, False)
        if not chosen:  # none, or it raised: the earlier order?
            earlier = _calls(modules, candidates, True)
            if earlier:
                warnings.warn(f"modules: {rule} takes (name, module); filters take torchao's "
                              f"(module, fqn) order now (the earlier one is deprecated)",
                              DeprecationWarning, stacklevel=4)
                chosen = earlier
        if not chosen:
            raise ValueError(f"modules: {rule} chose none of {owner}'s {len(candidates)} "
                             f"modules {what}")
        return chosen, rule
    patterns = (modules,) if isinstance(modules, str) else tuple(modules)
    if not patterns:
        raise ValueError("modules is empty: give None (every module), name patterns or a "
                         "callable")
    for p in patterns:
        if not isinstance(p, str):
            raise TypeError(f"modules holds a {type(p).__name__}: expected name patterns (str), "
                            f"e.g. 'blocks.*.attn'")
    names = {c[0] for c in candidates}
    unmatched = [p for p in patterns if not any(name_matches(c[0], p, names) for c in candidates)]
    if unmatched:
        shown = ", ".join(c[0] for c in candidates[:8]) + (", ..." if len(candidates) > 8 else "")
        raise ValueError(f"modules {unmatched!r} match none of {owner}'s modules {what} "
                         f"(those: {shown or 'none'})")
    chosen = [c for c in candidates if any(name_matches(c[0], p, names) for p in patterns)]
    return chosen, list(patterns)
