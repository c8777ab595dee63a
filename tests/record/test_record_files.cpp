// The record's writers touch only regular files of their own (issue 65 items 1-3): a symbolic
// link, FIFO or folder where a file is to be replaced, written or appended to is refused with a
// message naming it and what it is, without blocking on a FIFO and without writing through a
// link; a link planted at a temporary's name is not followed.
#include <QTemporaryDir>
#include <QTest>

#include "record/record_error.h"
#include "record/record_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

using namespace plab;
namespace fs = std::filesystem;

class TestRecordFiles : public QObject {
    Q_OBJECT
private slots:
    void replacesRegularFilesOnly();
    void plantedTemporaryLinkIsNotFollowed();
    void rowFilesAndLocksRefuseLinksAndFifos();
    void appendGoesOnAtTheEnd();
};

namespace {

std::string contents(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

// The message of what f throws as RecordError, or "" when it throws nothing.
template <class F>
std::string refusal(F&& f) {
    try {
        f();
    } catch (const RecordError& e) {
        return e.what();
    }
    return {};
}

} // namespace

void TestRecordFiles::replacesRegularFilesOnly() {
    QTemporaryDir tmp;
    const std::string dir = tmp.path().toStdString();
    const std::string victim = dir + "/victim";
    std::ofstream(victim) << "keep";

    const std::string link = dir + "/link.json";
    QVERIFY(::symlink(victim.c_str(), link.c_str()) == 0);
    const std::string viaLink = refusal([&] { writeFileAtomically(link, "new"); });
    QVERIFY2(viaLink.find(link + ": is a symbolic link") != std::string::npos, viaLink.c_str());
    QVERIFY(fs::is_symlink(link)); // not replaced
    QCOMPARE(contents(victim), std::string("keep"));

    const std::string fifo = dir + "/fifo.json";
    QVERIFY(::mkfifo(fifo.c_str(), 0644) == 0);
    const std::string viaFifo = refusal([&] { writeFileAtomically(fifo, "new"); });
    QVERIFY2(viaFifo.find(fifo + ": is a FIFO") != std::string::npos, viaFifo.c_str());
    QVERIFY(fs::is_fifo(fifo));

    const std::string folder = dir + "/folder.json";
    fs::create_directory(folder);
    const std::string viaFolder = refusal([&] { writeFileAtomically(folder, "new"); });
    QVERIFY2(viaFolder.find(folder + ": is a folder") != std::string::npos, viaFolder.c_str());
    QVERIFY(fs::is_directory(folder));
    for (const std::string& path : {link, fifo, folder})
        QVERIFY(!fs::exists(fs::symlink_status(path + ".tmp")));

    const std::string regular = dir + "/regular.json";
    writeFileAtomically(regular, "one");
    writeFileAtomically(regular, "two");
    QCOMPARE(contents(regular), std::string("two"));
}

void TestRecordFiles::plantedTemporaryLinkIsNotFollowed() {
    QTemporaryDir tmp;
    const std::string dir = tmp.path().toStdString();
    const std::string victim = dir + "/victim";
    std::ofstream(victim) << "keep";
    const std::string target = dir + "/summary.json";
    QVERIFY(::symlink(victim.c_str(), (target + ".tmp").c_str()) == 0);
    writeFileAtomically(target, "written");
    QCOMPARE(contents(target), std::string("written"));
    QCOMPARE(contents(victim), std::string("keep")); // the link was removed, not written through
    QVERIFY(!fs::exists(fs::symlink_status(target + ".tmp")));
}

void TestRecordFiles::rowFilesAndLocksRefuseLinksAndFifos() {
    QTemporaryDir tmp;
    const std::string dir = tmp.path().toStdString();
    const std::string victim = dir + "/victim";
    std::ofstream(victim) << "keep";
    const std::string link = dir + "/metrics.csv";
    QVERIFY(::symlink(victim.c_str(), link.c_str()) == 0);
    const std::string viaLink = refusal([&] { RowFile file(link); });
    QVERIFY2(viaLink.find("symbolic link") != std::string::npos, viaLink.c_str());
    QCOMPARE(contents(victim), std::string("keep")); // not truncated

    // A FIFO is refused at once: opening one to write used to wait for a reader forever.
    const std::string fifo = dir + "/events.jsonl";
    QVERIFY(::mkfifo(fifo.c_str(), 0644) == 0);
    const std::string viaFifo = refusal([&] { RowFile file(fifo, WriteOpen::Append); });
    QVERIFY2(viaFifo.find("FIFO") != std::string::npos, viaFifo.c_str());

    const std::string run = dir + "/run";
    fs::create_directory(run);
    QVERIFY(::symlink(victim.c_str(), (run + "/.lock").c_str()) == 0);
    const std::string lock = refusal([&] { RunDirectoryLock held(run); });
    QVERIFY2(lock.find(run + "/.lock: is a symbolic link") != std::string::npos, lock.c_str());
    QCOMPARE(contents(victim), std::string("keep"));
}

void TestRecordFiles::appendGoesOnAtTheEnd() {
    QTemporaryDir tmp;
    const std::string path = tmp.path().toStdString() + "/jobs";
    RowFile(path, WriteOpen::Append).append("1 a\n");
    RowFile(path, WriteOpen::Append).append("2 b\n");
    QCOMPARE(contents(path), std::string("1 a\n2 b\n"));
    RowFile(path).append("3 c\n");
    QCOMPARE(contents(path), std::string("3 c\n")); // Truncate, the default, starts anew
}

QTEST_GUILESS_MAIN(TestRecordFiles)
#include "test_record_files.moc"
