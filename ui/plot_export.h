// A plot written for a paper: PNG (at twice the size), PDF and SVG, each rendered in memory and
// then written whole (QSaveFile), so that a full disk or a read-only folder is an error naming
// the file and the system's reason, never a 0-byte or cut-off file left as if it were fine.
#pragma once

#include <QString>

class QCustomPlot;
class QFont;

namespace plab {

// Writes base.png, base.pdf and base.svg of `plot` at width x height, with `title` above it in
// the files (what a figure cut from its window needs: the run, layer, tensor, format, scale,
// step); returns the first error (empty: all three written).
QString exportPlot(QCustomPlot* plot, const QString& base, int width, int height,
                   const QString& title = {});

// `title` in lines of at most `width` pixels in `font`, broken between words (a word longer than
// the width stands on its own line).
QString wrappedTitle(const QString& title, const QFont& font, int width);

// path replaced by bytes as a whole, by the record's writer (temporary file, every write checked,
// fsync, rename), or left as it was; the error names the file and the system's reason, where
// QSaveFile says "Unknown error" for a file-size limit. Empty: written.
QString writeWholeFile(const QString& path, const QByteArray& bytes);

} // namespace plab
