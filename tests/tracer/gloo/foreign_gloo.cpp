// A gloo that is not Debian's libgloo.so.0 (as the PyTorch wheels' copy inside libtorch_cpu is): the two entry points
// the preload interposes, under their C++ names, counting their calls. The preload must find that it cannot read
// this gloo's objects, pass every call through, and say so once (foreign_gloo_test.sh).
#include <cstdio>

extern "C" {
int foreign_gloo_calls = 0;

__attribute__((visibility("default"))) void foreign_connect_full_mesh(void*, void*, void*) __asm__(
    "_ZN4gloo10rendezvous7Context15connectFullMeshERNS0_5StoreERSt10shared_ptrINS_9transport6DeviceEE");
void foreign_connect_full_mesh(void*, void*, void*) { ++foreign_gloo_calls; }

__attribute__((visibility("default"))) void foreign_allreduce(const void*) __asm__(
    "_ZN4gloo9allreduceERKNS_16AllreduceOptionsE");
void foreign_allreduce(const void*) { ++foreign_gloo_calls; }

__attribute__((visibility("default"))) void foreign_broadcast(void*) __asm__(
    "_ZN4gloo9broadcastERNS_16BroadcastOptionsE");
void foreign_broadcast(void*) { ++foreign_gloo_calls; }
}
