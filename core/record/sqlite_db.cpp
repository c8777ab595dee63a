// SqliteDb / SqliteStatement: the C API with every result code checked.
#include "record/sqlite_db.h"

#include <sqlite3.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <limits>

#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

namespace plab {
namespace {

// Why a write to the database or its write-ahead log failed when SQLite kept no errno (its short
// write path reports "disk full" without one): the file size limit, or a full file system.
std::string writeFailureReason(const std::string& path) {
    rlimit limit{};
    if (::getrlimit(RLIMIT_FSIZE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) {
        for (const std::string& file : {path, path + "-wal"}) {
            struct stat st {};
            if (::stat(file.c_str(), &st) == 0 &&
                static_cast<rlim_t>(st.st_size) + 65536 > limit.rlim_cur)
                return std::strerror(EFBIG);
        }
    }
    struct statvfs fs {};
    const std::string dir = path.substr(0, path.find_last_of('/') + 1);
    if (::statvfs(dir.empty() ? "." : dir.c_str(), &fs) == 0 &&
        static_cast<unsigned long long>(fs.f_bavail) * fs.f_frsize < (1u << 20))
        return std::strerror(ENOSPC);
    return {};
}

// "PATH: cannot write (File too large) [sqlite: disk I/O error]": the system's reason first when
// SQLite had one, as it is the part a person can act on.
std::string describe(sqlite3* db, int code, const std::string& path) {
    const int primary = code & 0xff;
    std::string what =
        primary == SQLITE_FULL || primary == SQLITE_IOERR       ? "cannot write"
        : primary == SQLITE_BUSY || primary == SQLITE_LOCKED    ? "is in use by another process"
        : primary == SQLITE_CANTOPEN                            ? "cannot open"
        : primary == SQLITE_NOTADB || primary == SQLITE_CORRUPT ? "is not a readable run record"
        : primary == SQLITE_READONLY                            ? "is read-only"
                                                                : "database error";
    const int err = db ? sqlite3_system_errno(db) : 0;
    if (err != 0 && primary != SQLITE_BUSY && primary != SQLITE_LOCKED)
        what += std::string(" (") + std::strerror(err) + ")";
    else if (primary == SQLITE_FULL || primary == SQLITE_IOERR)
        if (const std::string reason = writeFailureReason(path); !reason.empty())
            what += " (" + reason + ")";
    const char* message = db ? sqlite3_errmsg(db) : sqlite3_errstr(code);
    return path + ": " + what + " [sqlite: " + (message ? message : sqlite3_errstr(code)) + "]";
}

// A write the storage refused (full, I/O error) is a RecordWriteError; the rest (a busy, missing
// or foreign file) a RecordError.
[[noreturn]] void throwFailure(sqlite3* db, int code, const std::string& path) {
    const int primary = code & 0xff;
    if (primary == SQLITE_FULL || primary == SQLITE_IOERR)
        throw RecordWriteError(describe(db, code, path));
    throw RecordError(describe(db, code, path));
}

} // namespace

SqliteStatement::SqliteStatement(sqlite3_stmt* statement, std::string path)
    : m_statement(statement), m_path(std::move(path)) {}

SqliteStatement::~SqliteStatement() {
    sqlite3_finalize(m_statement);
}

SqliteStatement::SqliteStatement(SqliteStatement&& other) noexcept
    : m_statement(other.m_statement), m_path(std::move(other.m_path)) {
    other.m_statement = nullptr;
}

SqliteStatement& SqliteStatement::operator=(SqliteStatement&& other) noexcept {
    if (this != &other) {
        sqlite3_finalize(m_statement);
        m_statement = other.m_statement;
        m_path = std::move(other.m_path);
        other.m_statement = nullptr;
    }
    return *this;
}

void SqliteStatement::fail(int code) const {
    throwFailure(sqlite3_db_handle(m_statement), code, m_path);
}

SqliteStatement& SqliteStatement::bind(int index, std::int64_t value) {
    if (const int rc = sqlite3_bind_int64(m_statement, index, value); rc != SQLITE_OK)
        fail(rc);
    return *this;
}

SqliteStatement& SqliteStatement::bind(int index, double value) {
    if (std::isnan(value))
        return bind(index, std::string_view("nan"));
    if (const int rc = sqlite3_bind_double(m_statement, index, value); rc != SQLITE_OK)
        fail(rc);
    return *this;
}

SqliteStatement& SqliteStatement::bind(int index, std::string_view text) {
    const int rc = sqlite3_bind_text64(m_statement, index, text.data(), text.size(),
                                       SQLITE_TRANSIENT, SQLITE_UTF8);
    if (rc != SQLITE_OK)
        fail(rc);
    return *this;
}

SqliteStatement& SqliteStatement::bindBlob(int index, std::string_view bytes) {
    if (const int rc =
            sqlite3_bind_blob64(m_statement, index, bytes.data(), bytes.size(), SQLITE_TRANSIENT);
        rc != SQLITE_OK)
        fail(rc);
    return *this;
}

SqliteStatement& SqliteStatement::bindNull(int index) {
    if (const int rc = sqlite3_bind_null(m_statement, index); rc != SQLITE_OK)
        fail(rc);
    return *this;
}

bool SqliteStatement::next() {
    const int rc = sqlite3_step(m_statement);
    if (rc == SQLITE_ROW)
        return true;
    if (rc == SQLITE_DONE)
        return false;
    sqlite3_reset(m_statement);
    fail(rc);
}

void SqliteStatement::run() {
    while (next()) {
    }
    reset();
}

void SqliteStatement::reset() {
    sqlite3_reset(m_statement);
    sqlite3_clear_bindings(m_statement);
}

bool SqliteStatement::isNull(int column) const {
    return sqlite3_column_type(m_statement, column) == SQLITE_NULL;
}

std::int64_t SqliteStatement::integer(int column) const {
    return sqlite3_column_int64(m_statement, column);
}

double SqliteStatement::real(int column) const {
    switch (sqlite3_column_type(m_statement, column)) {
    case SQLITE_NULL:
    case SQLITE_TEXT: // 'nan' (see the header)
        return std::numeric_limits<double>::quiet_NaN();
    default:
        return sqlite3_column_double(m_statement, column);
    }
}

std::string SqliteStatement::text(int column) const {
    const auto* p = sqlite3_column_text(m_statement, column);
    return p ? std::string(reinterpret_cast<const char*>(p),
                           static_cast<std::size_t>(sqlite3_column_bytes(m_statement, column)))
             : std::string();
}

std::string SqliteStatement::blob(int column) const {
    const void* p = sqlite3_column_blob(m_statement, column);
    return p ? std::string(static_cast<const char*>(p),
                           static_cast<std::size_t>(sqlite3_column_bytes(m_statement, column)))
             : std::string();
}

SqliteDb::SqliteDb(const std::string& path, Mode mode) : m_path(path) {
    const int flags = (mode == Mode::ReadOnly    ? SQLITE_OPEN_READONLY
                       : mode == Mode::Immutable ? SQLITE_OPEN_READONLY | SQLITE_OPEN_URI
                       : mode == Mode::ReadWrite ? SQLITE_OPEN_READWRITE
                                                 : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE) |
                      SQLITE_OPEN_NOMUTEX;
    std::string name = path;
    if (mode == Mode::Immutable) { // a URI: '%', '?' and '#' in the path escaped
        name = "file:";
        for (char c : path)
            name += c == '%'   ? std::string("%25")
                    : c == '?' ? std::string("%3f")
                    : c == '#' ? std::string("%23")
                               : std::string(1, c);
        name += "?immutable=1";
    }
    const int rc = sqlite3_open_v2(name.c_str(), &m_db, flags, nullptr);
    if (rc != SQLITE_OK) {
        const std::string message = describe(m_db, rc, path);
        sqlite3_close(m_db);
        m_db = nullptr;
        throw RecordError(message);
    }
    sqlite3_extended_result_codes(m_db, 1);
    // A reader (an export, the GUI) and the run's writer can meet on a lock only briefly (the
    // end-of-run checkpoint): wait for it instead of failing at once.
    sqlite3_busy_timeout(m_db, 5000);
}

SqliteDb::~SqliteDb() {
    sqlite3_close_v2(m_db);
}

void SqliteDb::exec(const std::string& sql) {
    char* message = nullptr;
    const int rc = sqlite3_exec(m_db, sql.c_str(), nullptr, nullptr, &message);
    sqlite3_free(message);
    if (rc != SQLITE_OK)
        throwFailure(m_db, rc, m_path);
}

SqliteStatement SqliteDb::prepare(std::string_view sql) {
    sqlite3_stmt* statement = nullptr;
    const int rc = sqlite3_prepare_v3(m_db, sql.data(), static_cast<int>(sql.size()),
                                      SQLITE_PREPARE_PERSISTENT, &statement, nullptr);
    if (rc != SQLITE_OK)
        throwFailure(m_db, rc, m_path);
    return SqliteStatement(statement, m_path);
}

std::int64_t SqliteDb::queryInteger(std::string_view sql, std::int64_t fallback) {
    SqliteStatement s = prepare(sql);
    return s.next() ? s.integer(0) : fallback;
}

bool SqliteDb::hasTable(const std::string& name) {
    SqliteStatement s = prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1");
    s.bind(1, std::string_view(name));
    return s.next();
}

} // namespace plab
