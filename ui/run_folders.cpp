#include "run_folders.h"

#include <QDir>
#include <QFileInfo>

namespace plab {

QString newTimestampedFolder(const QString& parent, const QString& prefix, const QDateTime& now) {
    const QString first =
        parent + QLatin1Char('/') + prefix + now.toString(QStringLiteral("yyyyMMdd-hhmmss-zzz"));
    QDir().mkpath(parent);
    for (int n = 1; n <= 1000; ++n) {
        const QString path = n == 1 ? first : first + QLatin1Char('-') + QString::number(n);
        if (QDir().mkdir(path)) // false where it exists: mkdir(2) is the atomic test
            return path;
        if (!QFileInfo::exists(path)) // not taken, yet not made: no suffix will help
            break;
    }
    return first;
}

} // namespace plab
