// New folders for runs and comparisons, one per start, named by the local time: the one folder
// maker of the CLI's `train` (without --out) and the app's runs and Compare.
#pragma once

#include <ctime>
#include <string>

namespace plab {

// Makes and returns a new folder under `parent` (made too if missing) named `prefix` plus the
// local time to the millisecond, e.g. runs/20261203-105427-976. The folder is made here, by
// mkdir(2), which is the atomic test that nobody else has it: two starts in one millisecond (two
// windows, a test's two shards, two CLI runs) used to get one name, and the second run was
// refused by the first one's lock. A name already taken gets "-2", "-3", ... Where no folder can
// be made (no space, no permission) it returns the first name, for the run's own error to report.
std::string newTimestampedFolder(const std::string& parent, const std::string& prefix);
// The same at a given local time (tests).
std::string newTimestampedFolder(const std::string& parent, const std::string& prefix,
                                 const std::tm& localTime, int milliseconds);

} // namespace plab
