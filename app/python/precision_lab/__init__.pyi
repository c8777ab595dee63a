# Type stubs for precision_lab (the public names of __init__.py): editors complete and check them.
from os import PathLike
from typing import Any, Iterable, Optional, Sequence, Tuple, Union

import numpy
import pandas

from ._runs import DistributedRun, Run

_Format = Union[str, Any]  # a name ("fp8-e4m3", "nvfp4", "float8_e4m3fn"), a spec, a torch dtype
_Share = Union[float, str]  # 0.01 or "1%"

ROUNDINGS: Tuple[str, ...]
MAX_THREADS: int

def formats(spec: Optional[str] = ...) -> Any: ...
def quantize(x: Any, fmt: _Format, rounding: str = ..., seed: int = ..., scale: float = ...,
             stats: bool = ..., scale_rounding: Optional[str] = ..., out: Any = ...,
             threads: int = ..., overflow: Optional[str] = ..., four_over_six: bool = ...,
             pow2_scales: bool = ..., block_scales: bool = ..., error: bool = ...,
             stream: int = ...) -> Tuple[numpy.ndarray, Optional[dict]]: ...
def open_run(dir: Union[str, PathLike]) -> Union[Run, DistributedRun]: ...
def advise(run_dir: Union[str, PathLike], ladder: Union[str, Sequence[str], None] = ...,
           max_flushed: _Share = ..., max_overflow: _Share = ..., min_sqnr: float = ...,
           max_flushed_blocks: _Share = ..., max_saturated_blocks: _Share = ...,
           steps: Union[str, int] = ..., margin: _Share = ...,
           fp4_noise_check: bool = ...) -> pandas.DataFrame: ...
def export_advice(run_dir: Union[str, PathLike], kind: str = ...,
                  out: Optional[Union[str, PathLike]] = ...,
                  ladder: Union[str, Sequence[str], None] = ..., max_flushed: _Share = ...,
                  max_overflow: _Share = ..., min_sqnr: float = ...,
                  max_flushed_blocks: _Share = ..., max_saturated_blocks: _Share = ...,
                  steps: Union[str, int] = ..., margin: _Share = ...,
                  fp4_noise_check: bool = ...) -> str: ...
