"""What the watcher and an emulation share when their record cannot be written (a full disk, a
file-size limit): they are observers of the user's training, so the recording stops and the
training goes on; the first failure is kept, said once on stderr, and readable as
``failed`` / ``error``."""

import sys


class RecordFailure:
    _error = None

    @property
    def failed(self):
        """Whether recording stopped because the record could not be written (a full disk)."""
        return self._error is not None

    @property
    def error(self):
        """Why recording stopped (the first write failure), or None."""
        return self._error

    def _recording_failed(self, error, step, who, goes_on):
        """Keeps and says the first failure: ``who`` (e.g. "precision_lab.torch.watch") stopped
        recording into run_dir, noticed at ``step``; ``goes_on`` says what continues."""
        if self._error is None:
            self._error = str(error)
            print(f"{who}: recording into {self.run_dir} stopped (noticed at step {step}): "
                  f"{self._error}; {goes_on}", file=sys.stderr, flush=True)
