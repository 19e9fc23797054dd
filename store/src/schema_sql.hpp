#pragma once
// The DDL, generated from tables.def. Changing a table means a schema version bump (minor for added
// columns/tables, major otherwise) and an update of docs/trace-format.md.
#include <collscope/store/schema.hpp>

#include <string>

namespace collscope::store::detail {

// "CREATE TABLE name(col TYPE ..., ...);" for one table.
template <typename Row>
std::string create_table_sql() {
  using T = Table<Row>;
  std::string sql = "CREATE TABLE " + std::string(T::name) + "(";
  std::string keys;  // key columns, in order
  bool integer_key = false;
  for (const ColumnInfo& c : T::columns) {
    if (!(c.flags.bits & column_bit::kKey)) continue;
    keys += (keys.empty() ? "" : ", ") + std::string(c.name);
    integer_key = c.type == SqlType::Integer;
  }
  const bool one_key = !keys.empty() && keys.find(',') == std::string::npos;
  bool first = true;
  for (const ColumnInfo& c : T::columns) {
    if (!first) sql += ", ";
    first = false;
    sql += c.name;
    sql += c.type == SqlType::Integer ? " INTEGER"
           : c.type == SqlType::Real  ? " REAL"
           : c.type == SqlType::Blob  ? " BLOB"
                                      : " TEXT";
    if ((c.flags.bits & column_bit::kKey) && one_key) sql += " PRIMARY KEY";
    else if (!c.nullable) sql += " NOT NULL";
    if (c.flags.bits & column_bit::kDefaultZero) sql += " DEFAULT 0";
  }
  if (!keys.empty() && !one_key) sql += ", PRIMARY KEY(" + keys + ")";
  sql += ")";
  // A single INTEGER key is the rowid; a table keyed otherwise (meta by text, pairs) needs no rowid of its own.
  if (!keys.empty() && !(one_key && integer_key)) sql += " WITHOUT ROWID";
  return sql + ";\n";
}

inline std::string schema_sql() {
  std::string sql;
  for_each_table([&](auto table) { sql += create_table_sql<typename decltype(table)::Row>(); });
  return sql;
}

}  // namespace collscope::store::detail
