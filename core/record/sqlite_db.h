// A small RAII layer over SQLite's C API for the run record: one connection, prepared
// statements, and every failure thrown as RecordError naming the database file, the system's
// reason when there is one (a full disk says "File too large" / "No space left on device", not
// only "disk I/O error") and SQLite's message.
//
// NaN: SQLite stores a bound NaN as NULL, which would read back as "not measured". A NaN is
// therefore bound as the text 'nan' (REAL columns keep text that is not a number as text) and
// read back as NaN; NULL stays "no value". +-Inf are REALs as they are.
#pragma once

#include "record/record_error.h"

#include <cstdint>
#include <string>
#include <string_view>

struct sqlite3;
struct sqlite3_stmt;

namespace plab {

class SqliteStatement {
public:
    SqliteStatement() = default;
    SqliteStatement(sqlite3_stmt* statement, std::string path);
    ~SqliteStatement();
    SqliteStatement(SqliteStatement&& other) noexcept;
    SqliteStatement& operator=(SqliteStatement&& other) noexcept;
    SqliteStatement(const SqliteStatement&) = delete;
    SqliteStatement& operator=(const SqliteStatement&) = delete;

    // Parameters are 1-based, as in SQL's ?1, ?2, ...
    SqliteStatement& bind(int index, std::int64_t value);
    SqliteStatement& bind(int index, double value); // NaN as 'nan'
    SqliteStatement& bind(int index, std::string_view text);
    SqliteStatement& bindBlob(int index, std::string_view bytes);
    SqliteStatement& bindNull(int index);

    bool prepared() const { return m_statement != nullptr; }
    bool next();  // steps; true while there is a row to read
    void run();   // steps a statement that returns no rows, then resets it for the next use
    void reset(); // ready for new bindings

    // Columns are 0-based.
    bool isNull(int column) const;
    std::int64_t integer(int column) const;
    double real(int column) const; // NULL and 'nan' read as NaN
    std::string text(int column) const;
    std::string blob(int column) const;

private:
    [[noreturn]] void fail(int code) const;
    sqlite3_stmt* m_statement = nullptr;
    std::string m_path;
};

class SqliteDb {
public:
    // Immutable: read-only storage whose write-ahead log cannot be read (SQLite's immutable=1;
    // the database file as last checkpointed).
    enum class Mode { ReadOnly, ReadWrite, ReadWriteCreate, Immutable };
    SqliteDb(const std::string& path, Mode mode);
    ~SqliteDb();
    SqliteDb(const SqliteDb&) = delete;
    SqliteDb& operator=(const SqliteDb&) = delete;

    void exec(const std::string& sql); // one or more statements without results
    SqliteStatement prepare(std::string_view sql);
    // A single integer result (PRAGMA, count(*)); `fallback` when there is no row.
    std::int64_t queryInteger(std::string_view sql, std::int64_t fallback = 0);
    bool hasTable(const std::string& name);
    const std::string& path() const { return m_path; }

private:
    sqlite3* m_db = nullptr;
    std::string m_path;
};

} // namespace plab
