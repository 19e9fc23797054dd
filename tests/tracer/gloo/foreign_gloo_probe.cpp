// Calls the foreign gloo (foreign_gloo.cpp) through the PLT, as libtorch_cpu calls its gloo: a context connected,
// then two allreduces and two broadcasts on options that are garbage to anyone who reads them as Debian's gloo lays
// them out. Prints how many calls reached the foreign gloo; exit 0 when all 5 did.
#include <cstdio>
#include <cstring>

extern "C" int foreign_gloo_calls;
extern "C" void connect_full_mesh(void*, void*, void*) __asm__(
    "_ZN4gloo10rendezvous7Context15connectFullMeshERNS0_5StoreERSt10shared_ptrINS_9transport6DeviceEE");
extern "C" void allreduce(const void*) __asm__("_ZN4gloo9allreduceERKNS_16AllreduceOptionsE");
extern "C" void broadcast(void*) __asm__("_ZN4gloo9broadcastERNS_16BroadcastOptionsE");

int main() {
  unsigned char context[64], options[256];
  std::memset(context, 0xab, sizeof context);
  std::memset(options, 0xcd, sizeof options);  // pointers that point nowhere, if read as Debian's gloo
  connect_full_mesh(context, nullptr, nullptr);
  for (int i = 0; i < 2; ++i) {
    allreduce(options);
    broadcast(options);
  }
  std::printf("foreign gloo calls: %d\n", foreign_gloo_calls);
  return foreign_gloo_calls == 5 ? 0 : 1;
}
