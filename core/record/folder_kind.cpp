// folderKind: the marker file of each kind of record.
#include "record/folder_kind.h"

#include "record/record_error.h"
#include "record/run_record_schema.h"

#include <filesystem>

namespace plab {
namespace {

struct KindMarker {
    FolderKind kind;
    const char* file;
    const char* what;
};
constexpr KindMarker kMarkers[] = {{FolderKind::Run, kRunRecordFile, "a run"},
                                   {FolderKind::Compare, "compare.csv", "a compare"},
                                   {FolderKind::Sweep, "sweep.json", "a sweep"}};

const KindMarker* markerOf(FolderKind kind) {
    for (const KindMarker& m : kMarkers)
        if (m.kind == kind)
            return &m;
    return nullptr;
}

} // namespace

FolderKind folderKind(const std::string& dir) {
    std::error_code ec;
    for (const KindMarker& m : kMarkers)
        if (std::filesystem::exists(std::filesystem::path(dir) / m.file, ec))
            return m.kind;
    return FolderKind::Empty;
}

std::string describeFolderKind(FolderKind kind) {
    const KindMarker* m = markerOf(kind);
    return m ? m->what : "no record";
}

void refuseOtherKind(const std::string& dir, FolderKind writing) {
    const FolderKind held = folderKind(dir);
    if (held == FolderKind::Empty || held == writing)
        return;
    const KindMarker* h = markerOf(held);
    const KindMarker* w = markerOf(writing);
    throw RecordError(dir + ": holds " + h->what + "'s record (" + h->file + "); " +
                      (w ? w->what : "a record") +
                      " is not written into it: choose another folder");
}

} // namespace plab
