// The hand-written wrappers (kind `custom` in functions.txt): start-up and shut-down, communicators, the
// completion of requests, persistent starts. Included after mpi/abi_body.hpp, inside the ABI's namespace.

// ---- start-up -----------------------------------------------------------------------------------------------

std::string library_version() {
  static char text[MPI_MAX_LIBRARY_VERSION_STRING + 1];
  int len = 0;
  if (real<kMpi_Get_library_version>()(text, &len) != MPI_SUCCESS || len <= 0) return {};
  std::string v(text, static_cast<std::size_t>(std::min(len, MPI_MAX_LIBRARY_VERSION_STRING)));
  while (!v.empty() && (v.back() == '\n' || v.back() == '\0' || v.back() == ' ')) v.pop_back();
  return v;
}

void after_init() {
  int rank = 0, size = 1;
  real<kMpi_Comm_rank>()(g.world, &rank);
  real<kMpi_Comm_size>()(g.world, &size);
  StartInfo info;
  info.world_rank = rank;
  info.world_size = size;
  info.meta.emplace_back(store::meta_key::kMpiVersion, library_version());
  info.meta.emplace_back("mpi_abi", kAbiName);
  // Registered before the writer starts, so they are the first rows of `communicators`.
  register_comm(g.world, "MPI_COMM_WORLD", std::nullopt, std::nullopt);
  register_comm(g.self, "MPI_COMM_SELF", std::nullopt, std::nullopt, static_cast<std::uint64_t>(rank));
  set_pending_scan(scan_pending_collectives);
  runtime_start(info);
  this_thread_buffer();  // the buffer's one-off cost is paid here, not inside the job's first call
}

int custom_Init(int* argc, char*** argv) {
  const int rc = real<kMpi_Init>()(argc, argv);
  if (rc == MPI_SUCCESS) after_init();
  return rc;
}

int custom_Init_thread(int* argc, char*** argv, int required, int* provided) {
  const int rc = real<kMpi_Init_thread>()(argc, argv, required, provided);
  if (rc == MPI_SUCCESS) after_init();
  return rc;
}

int custom_Finalize(void) {
  const int rc = real<kMpi_Finalize>()();
  runtime_stop();
  return rc;
}

// ---- communicators --------------------------------------------------------------------------------------------

int custom_Comm_create_group(MPI_Comm comm, MPI_Group group, int tag, MPI_Comm* newcomm) {
  const int rc = real<kMpi_Comm_create_group>()(comm, group, tag, newcomm);
  // Collective over `group` only, so the parent's creation index would differ between ranks: key by tag instead.
  if (rc == MPI_SUCCESS && recording() && *newcomm != g.null)
    register_comm(*newcomm, "create_group", std::nullopt, std::nullopt, static_cast<std::uint64_t>(tag) + 1);
  return rc;
}

int custom_Comm_free(MPI_Comm* comm) {
  const MPI_Comm old = comm ? *comm : g.null;
  const int rc = real<kMpi_Comm_free>()(comm);
  if (rc == MPI_SUCCESS && old != g.null && recording()) comm_unregister(handle_ptr(old));
  return rc;
}

// ---- completion: Wait*/Test* --------------------------------------------------------------------------------

// The requests of a completion call as they were before it (MPI sets completed ones to MPI_REQUEST_NULL, which is
// kept as key 0: no call is pending under it, and nothing is looked up for it).
class RequestSnapshot {
 public:
  RequestSnapshot(int n, const MPI_Request* requests) : n_(requests && n > 0 ? n : 0) {
    if (n_ > kInline) {
      thread_local std::vector<RequestKey> heap;  // grows once to the largest count seen
      if (heap.size() < static_cast<std::size_t>(n_)) heap.resize(static_cast<std::size_t>(n_));
      keys_ = heap.data();
    }
    for (int i = 0; i < n_; ++i) keys_[i] = requests[i] == g.request_null ? RequestKey{0} : key_of(requests[i]);
  }
  RequestKey operator[](int i) const { return keys_[i]; }
  int size() const { return n_; }

 private:
  static constexpr int kInline = 64;
  RequestKey inline_[kInline];
  RequestKey* keys_ = inline_;
  int n_;
};

// Statuses to read even when the caller ignores them (receives learn their source and size from them).
class StatusesOut {
 public:
  StatusesOut(int n, MPI_Status* given) : use_(given) {
    if (given == MPI_STATUSES_IGNORE && n > 0) {
      thread_local std::vector<MPI_Status> own;
      if (own.size() < static_cast<std::size_t>(n)) own.resize(static_cast<std::size_t>(n));
      use_ = own.data();
    }
    if (use_ != MPI_STATUSES_IGNORE)
      for (int i = 0; i < n; ++i) mark_unwritten(&use_[i]);
  }
  MPI_Status* use() const { return use_; }

 private:
  MPI_Status* use_;
};

// While a thread waits for a non-blocking collective, that collective is its call in flight (a hang shows in
// the wait; the row's start is when the waiting began).
class WaitingFor {
 public:
  explicit WaitingFor(const RequestSnapshot& requests) {
    Event e;
    for (int i = 0; i < requests.size(); ++i)
      if (pending_collective(requests[i], e)) {
        tb_ = &this_thread_buffer();
        e.t0 = ticks();
        publish_in_flight(*tb_, e);
        return;
      }
  }
  ~WaitingFor() {
    if (tb_) tb_->leave_call();
  }
  WaitingFor(const WaitingFor&) = delete;
  WaitingFor& operator=(const WaitingFor&) = delete;

 private:
  ThreadBuffer* tb_ = nullptr;
};

// A completion call's entry and exit times, at which the thread's scheduler counters are sampled as at a blocking
// call's (at most one sample per COLLSCOPE_CPU_SAMPLE_US): a halo exchange waits in MPI_Waitall, and without them
// a rank that makes only non-blocking calls had no samples to tell why it was late.
std::uint64_t completion_entry() {
  const std::uint64_t t = ticks();
  maybe_sample_cpu(t, CpuSampleSite::CallEntry);
  return t;
}
std::uint64_t completion_exit() {
  const std::uint64_t t = ticks();
  maybe_sample_cpu(t, CpuSampleSite::CallExit);
  return t;
}

// Request r completed in a completion call that ran from t0 to t1.
void completed(RequestKey r, std::uint64_t t0, std::uint64_t t1, int rc, const MPI_Status* status) {
  Event e;
  if (!pending_take(r, e)) return;
  e.t1 = t1;
  e.mpi.wait_ticks += t1 - t0;
  e.mpi.wait_calls += 1;
  if (e.status == MPI_SUCCESS) e.status = rc == MPI_ERR_IN_STATUS && status ? status->MPI_ERROR : rc;
  if (status && e.status == MPI_SUCCESS) apply_status(e, *status);
  if (recording()) record(e);
}

// A completion call over `requests`: `done(i)` says whether request i completed in it; the others were waited for.
template <typename Done>
void account(const RequestSnapshot& requests, std::uint64_t t0, int rc, MPI_Status* statuses, Done&& done) {
  const std::uint64_t t1 = completion_exit();
  for (int i = 0; i < requests.size(); ++i) {
    if (done(i)) completed(requests[i], t0, t1, rc, statuses ? &statuses[i] : nullptr);
    else pending_waited(requests[i], t1 - t0);
  }
}

int custom_Wait(MPI_Request* request, MPI_Status* status) {
  if (!any_pending()) return real<kMpi_Wait>()(request, status);
  const RequestSnapshot before(1, request);
  StatusOut out(status);
  MPI_Status* const st = out.use;
  const std::uint64_t t0 = completion_entry();
  int rc;
  {
    WaitingFor waiting(before);
    rc = real<kMpi_Wait>()(request, st);
  }
  completed(before[0], t0, completion_exit(), rc, st);
  return rc;
}

int custom_Test(MPI_Request* request, int* flag, MPI_Status* status) {
  if (!any_pending()) return real<kMpi_Test>()(request, flag, status);
  const RequestSnapshot before(1, request);
  StatusOut out(status);
  MPI_Status* const st = out.use;
  const std::uint64_t t0 = completion_entry();
  const int rc = real<kMpi_Test>()(request, flag, st);
  account(before, t0, rc, st, [&](int) { return *flag != 0; });
  return rc;
}

int custom_Waitall(int count, MPI_Request requests[], MPI_Status statuses[]) {
  if (!any_pending()) return real<kMpi_Waitall>()(count, requests, statuses);
  const RequestSnapshot before(count, requests);
  const StatusesOut st(count, statuses);
  const std::uint64_t t0 = completion_entry();
  int rc;
  {
    WaitingFor waiting(before);
    rc = real<kMpi_Waitall>()(count, requests, st.use());
  }
  account(before, t0, rc, st.use(), [](int) { return true; });
  return rc;
}

int custom_Testall(int count, MPI_Request requests[], int* flag, MPI_Status statuses[]) {
  if (!any_pending()) return real<kMpi_Testall>()(count, requests, flag, statuses);
  const RequestSnapshot before(count, requests);
  const StatusesOut st(count, statuses);
  const std::uint64_t t0 = completion_entry();
  const int rc = real<kMpi_Testall>()(count, requests, flag, st.use());
  account(before, t0, rc, st.use(), [&](int) { return *flag != 0; });
  return rc;
}

int custom_Waitany(int count, MPI_Request requests[], int* index, MPI_Status* status) {
  if (!any_pending()) return real<kMpi_Waitany>()(count, requests, index, status);
  const RequestSnapshot before(count, requests);
  StatusOut out(status);
  MPI_Status* const st = out.use;
  const std::uint64_t t0 = completion_entry();
  int rc;
  {
    WaitingFor waiting(before);
    rc = real<kMpi_Waitany>()(count, requests, index, st);
  }
  const std::uint64_t t1 = completion_exit();
  for (int i = 0; i < before.size(); ++i) {
    if (i == *index) completed(before[i], t0, t1, rc, st);
    else pending_waited(before[i], t1 - t0);
  }
  return rc;
}

int custom_Testany(int count, MPI_Request requests[], int* index, int* flag, MPI_Status* status) {
  if (!any_pending()) return real<kMpi_Testany>()(count, requests, index, flag, status);
  const RequestSnapshot before(count, requests);
  StatusOut out(status);
  MPI_Status* const st = out.use;
  const std::uint64_t t0 = completion_entry();
  const int rc = real<kMpi_Testany>()(count, requests, index, flag, st);
  const std::uint64_t t1 = completion_exit();
  for (int i = 0; i < before.size(); ++i) {
    if (*flag && i == *index) completed(before[i], t0, t1, rc, st);
    else pending_waited(before[i], t1 - t0);
  }
  return rc;
}

// Waitsome/Testsome: the requests at indices[0..outcount) completed.
template <typename Call>
int some_completed(int incount, MPI_Request requests[], int* outcount, int indices[], MPI_Status statuses[],
                   Call&& call, bool waits) {
  const RequestSnapshot before(incount, requests);
  const StatusesOut st(incount, statuses);
  const std::uint64_t t0 = completion_entry();
  int rc;
  if (waits) {
    WaitingFor waiting(before);
    rc = call(st.use());
  } else {
    rc = call(st.use());
  }
  const std::uint64_t t1 = completion_exit();
  const int n = *outcount == MPI_UNDEFINED ? 0 : *outcount;
  thread_local std::vector<char> done;
  done.assign(static_cast<std::size_t>(before.size()), 0);
  for (int k = 0; k < n; ++k)
    if (indices[k] >= 0 && indices[k] < before.size()) {
      done[static_cast<std::size_t>(indices[k])] = 1;
      // MPI packs the statuses of completed requests in completion order.
      completed(before[indices[k]], t0, t1, rc, st.use() ? &st.use()[k] : nullptr);
    }
  for (int i = 0; i < before.size(); ++i)
    if (!done[static_cast<std::size_t>(i)]) pending_waited(before[i], t1 - t0);
  return rc;
}

int custom_Waitsome(int incount, MPI_Request requests[], int* outcount, int indices[], MPI_Status statuses[]) {
  if (!any_pending()) return real<kMpi_Waitsome>()(incount, requests, outcount, indices, statuses);
  return some_completed(incount, requests, outcount, indices, statuses, [&](MPI_Status* st) {
    return real<kMpi_Waitsome>()(incount, requests, outcount, indices, st);
  }, true);
}

int custom_Testsome(int incount, MPI_Request requests[], int* outcount, int indices[], MPI_Status statuses[]) {
  if (!any_pending()) return real<kMpi_Testsome>()(incount, requests, outcount, indices, statuses);
  return some_completed(incount, requests, outcount, indices, statuses, [&](MPI_Status* st) {
    return real<kMpi_Testsome>()(incount, requests, outcount, indices, st);
  }, false);
}

// ---- persistent requests ------------------------------------------------------------------------------------

// Each start of a persistent request posts one call: numbered now (collectives: the same order on every rank).
void started(RequestKey r, std::uint64_t t0, int rc) {
  Event e;
  if (!persistent_find(r, e)) return;
  e.seq = take_seq(e.comm_slot, e.kind == EventKind::Collective ? SeqSpace::Collective : SeqSpace::PointToPoint);
  post(e, t0, rc, r);
}

int custom_Start(MPI_Request* request) {
  if (!recording() || !any_persistent()) return real<kMpi_Start>()(request);
  const RequestKey r = key_of(*request);
  const std::uint64_t t0 = ticks();
  const int rc = real<kMpi_Start>()(request);
  started(r, t0, rc);
  return rc;
}

int custom_Startall(int count, MPI_Request requests[]) {
  if (!recording() || !any_persistent()) return real<kMpi_Startall>()(count, requests);
  const RequestSnapshot before(count, requests);
  const std::uint64_t t0 = ticks();
  const int rc = real<kMpi_Startall>()(count, requests);
  for (int i = 0; i < before.size(); ++i) started(before[i], t0, rc);
  return rc;
}

int custom_Request_free(MPI_Request* request) {
  const RequestKey r = request ? key_of(*request) : 0;
  const int rc = real<kMpi_Request_free>()(request);
  if (rc != MPI_SUCCESS) return rc;
  if (any_persistent()) persistent_remove(r);
  Event e;
  // Freed while pending: its completion is never observed; the row ends at the free, status kStatusFreed.
  if (any_pending() && pending_take(r, e)) {
    e.t1 = ticks();
    e.status = store::kStatusFreed;
    if (recording()) record(e);
  }
  return rc;
}
