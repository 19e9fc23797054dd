// The pure parts of GPU capture, on inputs built here: CUPTI records -> rows, collectives matched to their
// kernels through external correlation ids, device copies attributed to the fusion buffer a collective reads.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "cuda/cupti_decode.hpp"
#include "cuda/gpu_fusion.hpp"

using namespace collscope::tracer::gpu;
using collscope::store::GpuActivityKind;

namespace {

template <typename Record>
const CUpti_Activity* as_activity(const Record& r) {
  return reinterpret_cast<const CUpti_Activity*>(&r);
}

}  // namespace

TEST(CuptiDecode, ConcurrentKernelBecomesAKernelRowWithDemangledName) {
  CUpti_ActivityKernel10 k;
  std::memset(&k, 0, sizeof k);
  k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k.start = 1'000;
  k.end = 5'500;
  k.deviceId = 2;
  k.streamId = 7;
  k.correlationId = 42;
  k.name = "_Z10axpyKernelifPKfPf";
  const DecodedRecord d = decode_cupti_record(as_activity(k));
  ASSERT_TRUE(d.activity);
  EXPECT_FALSE(d.external);
  EXPECT_EQ(d.activity->kind, GpuActivityKind::Kernel);
  EXPECT_EQ(d.activity->name, "axpyKernel(int, float, float const*, float*)");
  EXPECT_EQ(d.activity->device, 2);
  EXPECT_EQ(d.activity->stream, 7u);
  EXPECT_EQ(d.activity->start, 1'000u);
  EXPECT_EQ(d.activity->end, 5'500u);
  EXPECT_EQ(d.activity->correlation, 42u);
  EXPECT_EQ(d.activity->bytes, 0);
  EXPECT_FALSE(d.activity->copy_kind);
}

TEST(CuptiDecode, UnmangledKernelNameIsKept) {
  CUpti_ActivityKernel10 k;
  std::memset(&k, 0, sizeof k);
  k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k.name = "ncclDevKernel_AllReduce_Sum_f32_RING_LL";
  EXPECT_EQ(decode_cupti_record(as_activity(k)).activity->name, "ncclDevKernel_AllReduce_Sum_f32_RING_LL");
}

TEST(CuptiDecode, MemcpyCarriesBytesAndCopyKind) {
  CUpti_ActivityMemcpy6 m;
  std::memset(&m, 0, sizeof m);
  m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
  m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_DTOD;
  m.bytes = 1 << 20;
  m.start = 10;
  m.end = 20;
  m.deviceId = 1;
  m.streamId = 3;
  m.correlationId = 9;
  const auto a = decode_cupti_record(as_activity(m)).activity;
  ASSERT_TRUE(a);
  EXPECT_EQ(a->kind, GpuActivityKind::Memcpy);
  EXPECT_EQ(a->name, "memcpy DtoD");
  EXPECT_EQ(a->bytes, 1 << 20);
  ASSERT_TRUE(a->copy_kind);
  EXPECT_EQ(*a->copy_kind, CUPTI_ACTIVITY_MEMCPY_KIND_DTOD);
  EXPECT_EQ(a->device, 1);
  EXPECT_EQ(a->correlation, 9u);
}

TEST(CuptiDecode, MemsetAndSynchronisation) {
  CUpti_ActivityMemset4 s;
  std::memset(&s, 0, sizeof s);
  s.kind = CUPTI_ACTIVITY_KIND_MEMSET;
  s.bytes = 4096;
  s.deviceId = 0;
  s.streamId = 5;
  auto a = decode_cupti_record(as_activity(s)).activity;
  ASSERT_TRUE(a);
  EXPECT_EQ(a->kind, GpuActivityKind::Memset);
  EXPECT_EQ(a->bytes, 4096);
  EXPECT_EQ(a->stream, 5u);

  CUpti_ActivitySynchronization2 y;
  std::memset(&y, 0, sizeof y);
  y.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
  y.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE;
  y.streamId = 11;
  y.start = 100;
  y.end = 900;
  a = decode_cupti_record(as_activity(y)).activity;
  ASSERT_TRUE(a);
  EXPECT_EQ(a->kind, GpuActivityKind::Sync);
  EXPECT_EQ(a->name, "sync stream");
  EXPECT_EQ(a->device, -1);
  EXPECT_EQ(a->stream, 11u);
  y.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE;
  y.streamId = CUPTI_SYNCHRONIZATION_INVALID_VALUE;
  a = decode_cupti_record(as_activity(y)).activity;
  EXPECT_EQ(a->name, "sync context");
  EXPECT_EQ(a->stream, 0u);
}

// The collector's one path to the file (schema 1.6): a decoded activity becomes a gpu_activities record, saved in an
// event batch; decoded back it is the row the row path writes (store::row_of), every column.
TEST(CuptiDecode, ActivitiesThroughAnEventBatchAreTheRowPathsRows) {
  CUpti_ActivityKernel10 k;
  std::memset(&k, 0, sizeof k);
  k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k.start = 1'000, k.end = 5'500, k.deviceId = 2, k.streamId = 7, k.correlationId = 42;
  k.name = "ncclDevKernel_AllReduce_Sum_f32_RING_LL";
  CUpti_ActivityMemcpy6 m;
  std::memset(&m, 0, sizeof m);
  m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
  m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_DTOD;
  m.bytes = 1 << 20, m.start = 6'000, m.end = 7'000, m.deviceId = 1, m.streamId = 3, m.correlationId = 43;
  CUpti_ActivitySynchronization2 y;
  std::memset(&y, 0, sizeof y);
  y.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
  y.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE;
  y.streamId = 11, y.start = 7'100, y.end = 7'900;
  namespace store = collscope::store;
  const std::int64_t offset = 1'000'000'000;  // CUPTI's clock to CLOCK_MONOTONIC
  std::vector<store::GpuActivityRecord> records;
  std::int64_t name = 5;
  for (const CUpti_Activity* a : {as_activity(k), as_activity(m), as_activity(y)})
    records.push_back(gpu_activity_record(*decode_cupti_record(a).activity, name++, offset));
  EXPECT_EQ(records[0].start_ns, offset + 1'000);
  EXPECT_EQ(records[1].flags, store::kRecordCopyKind);
  EXPECT_EQ(records[2].device, -1);
  std::vector<std::uint8_t> payload(records.size() * store::kMaxRecordBytes);
  store::BatchEncoder<store::GpuActivityRecord> encoder;
  std::uint8_t* end = payload.data();
  for (const auto& r : records) end = encoder.encode(r, end);
  payload.resize(static_cast<std::size_t>(end - payload.data()));
  EXPECT_LE(payload.size(), 3u * 24);  // the target: at most 24 bytes an event
  store::BatchDecoder<store::GpuActivityRow> decoder(payload.data(), payload.size(), 100, 3, 0, "batch");
  for (std::size_t i = 0; i < records.size(); ++i) {
    store::GpuActivityRow got;
    ASSERT_TRUE(decoder.next(got));
    const store::GpuActivityRow want = store::row_of(records[i], 100 + static_cast<std::int64_t>(i), 0);
    EXPECT_EQ(got.id, want.id);
    EXPECT_EQ(got.kind, want.kind);
    EXPECT_EQ(got.name, want.name);
    EXPECT_EQ(got.device, want.device);
    EXPECT_EQ(got.stream, want.stream);
    EXPECT_EQ(got.start_ns, want.start_ns);
    EXPECT_EQ(got.end_ns, want.end_ns);
    EXPECT_EQ(got.correlation, want.correlation);
    EXPECT_EQ(got.bytes, want.bytes);
    EXPECT_EQ(got.copy_kind, want.copy_kind);
  }
  const store::GpuActivityRow copy = store::row_of(records[1], 1, 0);
  ASSERT_TRUE(copy.copy_kind);
  EXPECT_EQ(*copy.copy_kind, CUPTI_ACTIVITY_MEMCPY_KIND_DTOD);
  EXPECT_EQ(copy.kind, GpuActivityKind::Memcpy);
  EXPECT_EQ(copy.bytes, 1 << 20);
  EXPECT_FALSE(store::row_of(records[0], 1, 0).copy_kind);
}

TEST(CuptiDecode, ExternalCorrelationOnlyForOurKind) {
  CUpti_ActivityExternalCorrelation x;
  std::memset(&x, 0, sizeof x);
  x.kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
  x.externalKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0;
  x.externalId = 77;
  x.correlationId = 1234;
  auto d = decode_cupti_record(as_activity(x));
  EXPECT_FALSE(d.activity);
  ASSERT_TRUE(d.external);
  EXPECT_EQ(d.external->external_id, 77u);
  EXPECT_EQ(d.external->correlation, 1234u);
  x.externalKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM1;  // someone else's (e.g. a framework's profiler)
  EXPECT_FALSE(decode_cupti_record(as_activity(x)).external);
}

TEST(CuptiDecode, OtherKindsAndNullDecodeToNothing) {
  CUpti_Activity other;
  other.kind = CUPTI_ACTIVITY_KIND_DRIVER;
  auto d = decode_cupti_record(&other);
  EXPECT_FALSE(d.activity);
  EXPECT_FALSE(d.external);
  EXPECT_FALSE(decode_cupti_record(nullptr).activity);
}

TEST(GpuTimeMatcher, KernelSpanFillsTheCollectiveWhateverTheOrder) {
  GpuTimeMatcher m;
  // Collective row 10 under external id 1; its kernel (CUPTI correlation 500) arrives before the link record.
  m.add_collective(1, 10);
  m.add_kernel(500, 2'000, 3'000);
  EXPECT_TRUE(m.take_updates().empty());
  m.add_external(1, 500);
  auto u = m.take_updates();
  ASSERT_EQ(u.size(), 1u);
  EXPECT_EQ(u[0].row_id, 10);
  EXPECT_EQ(u[0].gpu_start_ns, 2'000);
  EXPECT_EQ(u[0].gpu_end_ns, 3'000);
  EXPECT_TRUE(m.take_updates().empty());  // reported once

  // Kernel and link before the collective row (the row is written in a later drain).
  m.add_external(2, 600);
  m.add_kernel(600, 4'000, 4'500);
  EXPECT_TRUE(m.take_updates().empty());
  m.add_collective(2, 11);
  u = m.take_updates();
  ASSERT_EQ(u.size(), 1u);
  EXPECT_EQ(u[0].row_id, 11);
  EXPECT_EQ(u[0].gpu_start_ns, 4'000);
}

TEST(GpuTimeMatcher, GroupedCallsShareOneLaunchAndSpanAllItsKernels) {
  GpuTimeMatcher m;
  // A group of three calls (rows 20..22) shares external id 9; the GroupEnd launched two kernels.
  for (std::int64_t row : {20, 21, 22}) m.add_collective(9, row);
  m.add_external(9, 700);
  m.add_external(9, 701);
  m.add_kernel(700, 1'000, 1'500);
  m.add_kernel(701, 1'200, 2'500);
  auto u = m.take_updates();
  ASSERT_EQ(u.size(), 3u);
  for (const auto& x : u) {
    EXPECT_EQ(x.gpu_start_ns, 1'000);
    EXPECT_EQ(x.gpu_end_ns, 2'500);
  }
  EXPECT_EQ(u[0].row_id, 20);
  EXPECT_EQ(u[2].row_id, 22);
  // A kernel of an unrelated API call (no link) changes nothing.
  m.add_kernel(999, 0, 10'000);
  EXPECT_TRUE(m.take_updates().empty());
}

// NCCL's kernels changed names (ncclKernel_* before 2.19, ncclDevKernel_* after), and a one-rank
// communicator's collective is a copy or `oneRankReduce`: the tie between a collective and its GPU work is the
// CUPTI correlation id of an API call made inside the NCCL call, never the name.
TEST(GpuTimeMatcher, GpuWorkIsTiedByCorrelationWhateverItsName) {
  struct Kernel {
    const char* name;
    std::uint32_t correlation;
    std::int64_t activity_row;
  };
  const Kernel kernels[] = {
      {"ncclKernel_AllReduce_RING_LL_Sum_float", 801, 41},      // NCCL 2.18 spelling, collective row 30
      {"ncclDevKernel_AllReduce_Sum_f32_RING_LL", 802, 42},     // NCCL 2.19+ spelling, collective row 31
      {"(anonymous namespace)::oneRankReduce<FuncPreMulSum<float>>", 803, 43},  // one-rank ncclAvg, row 32
      {"ncclDevKernel_Fake", 804, 44},  // named like NCCL but launched by the job itself: no external id
      {"scale_kernel(float*, int, float)", 805, 45},  // the job's own kernel
  };
  GpuTimeMatcher m;
  m.add_collective(1, 30);
  m.add_collective(2, 31);
  m.add_collective(3, 32);
  m.add_external(1, 801);
  m.add_external(3, 803);
  for (const auto& k : kernels) {
    CUpti_ActivityKernel10 rec;
    std::memset(&rec, 0, sizeof rec);
    rec.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    rec.name = k.name;
    rec.correlationId = k.correlation;
    rec.start = 1'000 * k.correlation;
    rec.end = rec.start + 500;
    const auto a = decode_cupti_record(as_activity(rec)).activity;
    ASSERT_TRUE(a);
    m.add_kernel(a->correlation, static_cast<std::int64_t>(a->start), static_cast<std::int64_t>(a->end), k.activity_row);
  }
  m.add_external(2, 802);  // the link record of the 2.19+ kernel comes after the kernel: still tied
  // A device-to-device copy launched inside collective 32's call (one rank, out of place) is its work too.
  CUpti_ActivityMemcpy6 copy;
  std::memset(&copy, 0, sizeof copy);
  copy.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
  copy.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_DTOD;
  copy.correlationId = 806;
  copy.start = 900'000;
  copy.end = 900'100;
  m.add_external(3, 806);
  const auto c = decode_cupti_record(as_activity(copy)).activity;
  ASSERT_TRUE(c);
  m.add_kernel(c->correlation, static_cast<std::int64_t>(c->start), static_cast<std::int64_t>(c->end), 46);

  auto links = m.take_links();
  std::sort(links.begin(), links.end(), [](auto& a, auto& b) { return a.activity_row < b.activity_row; });
  ASSERT_EQ(links.size(), 4u);
  EXPECT_EQ(links[0].collective_row, 30);
  EXPECT_EQ(links[0].activity_row, 41);
  EXPECT_EQ(links[1].collective_row, 31);
  EXPECT_EQ(links[1].activity_row, 42);
  EXPECT_EQ(links[2].collective_row, 32);
  EXPECT_EQ(links[2].activity_row, 43);
  EXPECT_EQ(links[3].collective_row, 32);
  EXPECT_EQ(links[3].activity_row, 46);
  EXPECT_TRUE(m.take_links().empty());  // reported once
  auto u = m.take_updates();
  ASSERT_EQ(u.size(), 3u);
  EXPECT_EQ(u[0].gpu_start_ns, 801'000);
  EXPECT_EQ(u[1].gpu_start_ns, 802'000);
  EXPECT_EQ(u[2].gpu_start_ns, 803'000);
  EXPECT_EQ(u[2].gpu_end_ns, 900'100);  // the collective's span covers the kernel and the copy
  // A collective row written after its work arrived is linked too.
  m.add_collective(1, 33);
  links = m.take_links();
  ASSERT_EQ(links.size(), 1u);
  EXPECT_EQ(links[0].collective_row, 33);
  EXPECT_EQ(links[0].activity_row, 41);
}

TEST(RecentCopies, CopiesInsideTheReadBufferArePackedTensors) {
  RecentCopies copies;
  const std::uint64_t fusion = 0x10000;
  copies.add(fusion + 0, 4096);
  copies.add(0x900000, 128);  // elsewhere: a copy into some tensor, not the fusion buffer
  copies.add(fusion + 4096, 1024);
  copies.add(fusion + 8192, 8192);  // ends past the 12 KiB read below: not inside
  const auto packed = copies.take_inside(fusion, 12 * 1024);
  ASSERT_EQ(packed.size(), 2u);
  EXPECT_EQ(packed[0].offset, 0u);
  EXPECT_EQ(packed[0].bytes, 4096u);
  EXPECT_EQ(packed[1].offset, 4096u);
  EXPECT_EQ(packed[1].bytes, 1024u);
  EXPECT_EQ(copies.size(), 2u);  // claimed copies are gone; the others stay for a later read
  EXPECT_TRUE(copies.take_inside(fusion, 12 * 1024).empty());
  EXPECT_EQ(copies.take_inside(fusion, 16 * 1024).size(), 1u);
}

TEST(RecentCopies, BoundedMemory) {
  RecentCopies copies;
  for (std::size_t i = 0; i < RecentCopies::kCapacity * 3; ++i) copies.add(i * 16, 16);
  EXPECT_LE(copies.size(), RecentCopies::kCapacity);
  copies.add(1, 0);  // empty copies are ignored
  EXPECT_LE(copies.size(), RecentCopies::kCapacity);
}
