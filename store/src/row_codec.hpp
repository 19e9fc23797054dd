#pragma once
// Binding and decoding of the row structs, generated from tables.def: the writer binds a row's columns in
// declaration order, the reader decodes the columns a ColumnSet chose. Calls SQLite directly (no wrapper call
// per column): the writer binds 21 columns per collective on its hot path.
#include <collscope/store/schema.hpp>

#include <sqlite3.h>

#include <charconv>
#include <string>

namespace collscope::store::detail {

// How one C++ member type is stored: bind(stmt, param, value) and read(stmt, column, value).
template <typename T, typename = void>
struct Codec;

template <typename T>
struct Codec<T, std::enable_if_t<std::is_integral_v<T>>> {
  // Unsigned 64-bit values (addresses, keys) are stored as the same 64 bits in SQLite's signed INTEGER.
  static void bind(sqlite3_stmt* s, int p, T v) { sqlite3_bind_int64(s, p, static_cast<sqlite3_int64>(v)); }
  static void read(sqlite3_stmt* s, int c, T& v) { v = static_cast<T>(sqlite3_column_int64(s, c)); }
};

template <>
struct Codec<double> {
  static void bind(sqlite3_stmt* s, int p, double v) { sqlite3_bind_double(s, p, v); }
  static void read(sqlite3_stmt* s, int c, double& v) { v = sqlite3_column_double(s, c); }
};

template <typename E>
struct Codec<E, std::enable_if_t<std::is_enum_v<E> && !std::is_same_v<E, Backend>>> {
  static void bind(sqlite3_stmt* s, int p, E v) { sqlite3_bind_int64(s, p, static_cast<sqlite3_int64>(v)); }
  static void read(sqlite3_stmt* s, int c, E& v) {
    const sqlite3_int64 x = sqlite3_column_int64(s, c);
    if constexpr (std::is_same_v<E, Op>) {
      v = (x >= 0 && x < kOpCount) ? static_cast<Op>(x) : Op::Unknown;  // a code this version does not know
    } else {
      v = static_cast<E>(x);
    }
  }
};

inline std::string_view column_text(sqlite3_stmt* s, int c) {
  const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(s, c));
  return p ? std::string_view(p, static_cast<std::size_t>(sqlite3_column_bytes(s, c))) : std::string_view();
}

template <>
struct Codec<std::string> {
  static void bind(sqlite3_stmt* s, int p, const std::string& v) {
    sqlite3_bind_text64(s, p, v.data(), v.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
  }
  static void read(sqlite3_stmt* s, int c, std::string& v) { v.assign(column_text(s, c)); }
};

template <>
struct Codec<Backend> {
  static void bind(sqlite3_stmt* s, int p, Backend v) {
    const std::string_view name = backend_name(v);
    sqlite3_bind_text(s, p, name.data(), static_cast<int>(name.size()), SQLITE_STATIC);
  }
  static void read(sqlite3_stmt* s, int c, Backend& v) { v = backend_from_name(column_text(s, c)).value_or(Backend::Mpi); }
};

// Communicator members: "0,2,5".
template <>
struct Codec<std::vector<std::int32_t>> {
  static void bind(sqlite3_stmt* s, int p, const std::vector<std::int32_t>& v) {
    std::string text;
    for (std::size_t i = 0; i < v.size(); ++i) {
      if (i) text += ',';
      text += std::to_string(v[i]);
    }
    sqlite3_bind_text64(s, p, text.data(), text.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
  }
  static void read(sqlite3_stmt* s, int c, std::vector<std::int32_t>& v) {
    v.clear();
    const std::string_view text = column_text(s, c);
    const char* p = text.data();
    const char* end = p + text.size();
    while (p < end) {
      std::int32_t x = 0;
      auto [next, ec] = std::from_chars(p, end, x);
      if (ec != std::errc()) break;
      v.push_back(x);
      p = next;
      if (p < end && *p == ',') ++p;
    }
  }
};

// Binary payloads (event_batches.payload).
template <>
struct Codec<std::vector<std::uint8_t>> {
  static void bind(sqlite3_stmt* s, int p, const std::vector<std::uint8_t>& v) {
    sqlite3_bind_blob64(s, p, v.data(), v.size(), SQLITE_TRANSIENT);
  }
  static void read(sqlite3_stmt* s, int c, std::vector<std::uint8_t>& v) {
    const auto* p = static_cast<const std::uint8_t*>(sqlite3_column_blob(s, c));
    v.assign(p, p + (p ? sqlite3_column_bytes(s, c) : 0));
  }
};

template <typename T>
struct Codec<std::optional<T>> {
  static void bind(sqlite3_stmt* s, int p, const std::optional<T>& v) {
    if (v) Codec<T>::bind(s, p, *v);
    else sqlite3_bind_null(s, p);
  }
  static void read(sqlite3_stmt* s, int c, std::optional<T>& v) {
    if (sqlite3_column_type(s, c) == SQLITE_NULL) {
      v.reset();
    } else {
      T x{};
      Codec<T>::read(s, c, x);
      v = std::move(x);
    }
  }
};

// RowCodec<Row>::bind(stmt, first_param, row, skip): every column but the first `skip`, in declaration order,
// from parameter first_param.
// RowCodec<Row>::read(stmt, mask, row): the columns in `mask`, from result column 0 in declaration order.
template <typename Row> struct RowCodec;
#define COLLSCOPE_TABLE(sql, RowT, since_, order)                                  \
  template <> struct RowCodec<RowT> {                                               \
    using Row = RowT;                                                               \
    static void bind(sqlite3_stmt* s, int p, const Row& r, int skip = 0) {          \
      int c = 0;
#define COLLSCOPE_COLUMN(type, member, flags) \
  if (c++ >= skip) Codec<type>::bind(s, p++, r.member);
#define COLLSCOPE_TABLE_END(sql)                                                    \
    }                                                                               \
    static void read(sqlite3_stmt* s, std::uint64_t mask, Row& r);                  \
  };
#include <collscope/store/tables.def>
#undef COLLSCOPE_TABLE
#undef COLLSCOPE_COLUMN
#undef COLLSCOPE_TABLE_END

#define COLLSCOPE_TABLE(sql, RowT, since_, order) \
  inline void RowCodec<RowT>::read(sqlite3_stmt* s, std::uint64_t mask, RowT& r) { int c = 0; std::uint64_t bit = 1;
#define COLLSCOPE_COLUMN(type, member, flags) \
  { if (mask & bit) Codec<type>::read(s, c++, r.member); } bit <<= 1;
#define COLLSCOPE_TABLE_END(sql) (void)c; }
#include <collscope/store/tables.def>
#undef COLLSCOPE_TABLE
#undef COLLSCOPE_COLUMN
#undef COLLSCOPE_TABLE_END

}  // namespace collscope::store::detail
