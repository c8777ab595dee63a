# Type stubs for precision_lab._runs (open_run's results).
from os import PathLike
from typing import Any, Dict, Iterable, List, Optional, Tuple, Union

import pandas

class Run:
    dir: str
    stage_names: List[str]
    config: Any
    source: Optional[str]
    watch: Any
    formats: List[str]
    summary: Optional[Dict[str, Any]]
    live: bool
    steps: pandas.DataFrame
    stats: pandas.DataFrame
    diagnostics: pandas.DataFrame
    events: pandas.DataFrame
    # open_run() makes one, from the record's tables as the extension reads them.
    def __init__(self, raw: Dict[str, Any]) -> None: ...
    def histograms(self, step: Optional[int] = ...) -> pandas.DataFrame: ...

class DistributedRun:
    dir: str
    ranks: Dict[int, Run]
    # open_run() makes one, from each rank's folder.
    def __init__(self, dir: Union[str, PathLike], ranks: Iterable[Tuple[int, str]]) -> None: ...
    stage_names: List[str]
    config: Any
    source: Optional[str]
    live: bool
    steps: pandas.DataFrame
    stats: pandas.DataFrame
    diagnostics: pandas.DataFrame
    events: pandas.DataFrame

def open_run(dir: Union[str, PathLike]) -> Union[Run, DistributedRun]: ...
