/* A traced job that links SQLite itself (as many Python and HPC stacks do): its SQLite calls must reach its own
 * libsqlite3, never the copy inside the preload. Each rank writes and reads a database of its own, and the
 * ranks agree on the rows with allreduces, which the tracer records.
 *   sqlite_job DIR ROWS   -> prints "rank R: sqlite <lib> <version>, N rows"; exit 0 when all is right. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <mpi.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (argc < 3) {
    fprintf(stderr, "usage: sqlite_job DIR ROWS\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  const int rows = atoi(argv[2]);
  Dl_info where;
  memset(&where, 0, sizeof where);
  dladdr((void*)&sqlite3_open_v2, &where);
  const char* lib = where.dli_fname ? where.dli_fname : "?";

  char path[4096];
  snprintf(path, sizeof path, "%s/job-%d.db", argv[1], rank);
  remove(path);
  sqlite3* db = NULL;
  int ok = sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) == SQLITE_OK;
  ok = ok && sqlite3_exec(db, "CREATE TABLE t(x INTEGER); BEGIN", NULL, NULL, NULL) == SQLITE_OK;
  sqlite3_stmt* insert = NULL;
  ok = ok && sqlite3_prepare_v2(db, "INSERT INTO t VALUES(?1)", -1, &insert, NULL) == SQLITE_OK;
  long counted = 0;
  for (int i = 0; ok && i < rows; ++i) {
    sqlite3_bind_int(insert, 1, i);
    ok = sqlite3_step(insert) == SQLITE_DONE;
    sqlite3_reset(insert);
    long one = 1, sum = 0;
    MPI_Allreduce(&one, &sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);  /* one traced allreduce per row */
    counted += sum;
  }
  sqlite3_finalize(insert);
  ok = ok && sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) == SQLITE_OK;
  sqlite3_stmt* count = NULL;
  long stored = -1;
  if (ok && sqlite3_prepare_v2(db, "SELECT count(*) FROM t", -1, &count, NULL) == SQLITE_OK &&
      sqlite3_step(count) == SQLITE_ROW)
    stored = sqlite3_column_int64(count, 0);
  sqlite3_finalize(count);
  sqlite3_close(db);
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  printf("rank %d: sqlite %s %s, %ld rows, %ld counted\n", rank, lib, sqlite3_libversion(), stored, counted);
  MPI_Finalize();
  return ok && stored == rows && counted == (long)rows * size && strstr(lib, "libsqlite3") ? 0 : 3;
}
