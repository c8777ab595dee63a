// Folders for the app's runs and comparisons, one per start, named by the local time.
#pragma once

#include <QDateTime>
#include <QString>

namespace plab {

// Makes and returns a new folder under `parent` (made too if missing) named `prefix` plus `now`
// to the millisecond, e.g. runs/20261203-105427-976. The folder is made here, atomically, so it
// is this start's alone: two starts in one millisecond (two windows, or a test's two shards)
// used to get one name, and the second run was refused by the first one's lock. A name already
// taken gets "-2", "-3", ... Where no folder can be made (no space, no permission) it returns
// the first name, for the run's own error to report.
QString newTimestampedFolder(const QString& parent, const QString& prefix,
                             const QDateTime& now = QDateTime::currentDateTime());

} // namespace plab
