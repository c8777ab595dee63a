// Which command's record a folder holds at its top, so that no command writes into a folder
// where another kind of record lives (one folder once ended up holding run.sqlite, compare.csv
// and sweep.csv: a train, a compare and a sweep given the same --out).
#pragma once

#include <string>

namespace plab {

enum class FolderKind { Empty, Run, Compare, Sweep };

// By the file that marks each (run.sqlite, compare.csv, sweep.json); Empty for none of them.
FolderKind folderKind(const std::string& dir);

// "a run", "a compare", "a sweep"; "no record" for Empty.
std::string describeFolderKind(FolderKind kind);

// Throws RecordError naming dir, what it holds and the file that says so, when it holds a
// record of another kind than `writing`; nothing when it holds none or one of that kind.
void refuseOtherKind(const std::string& dir, FolderKind writing);

} // namespace plab
