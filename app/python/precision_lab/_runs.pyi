# Type stubs for precision_lab._runs (open_run's results).
from typing import Any, Dict, List, Optional

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
    def histograms(self, step: Optional[int] = ...) -> pandas.DataFrame: ...

class DistributedRun:
    dir: str
    ranks: Dict[int, Run]
    stage_names: List[str]
    config: Any
    source: Optional[str]
    live: bool
    steps: pandas.DataFrame
    stats: pandas.DataFrame
    diagnostics: pandas.DataFrame
    events: pandas.DataFrame
