! A Fortran MPI program with a known set of calls, built once per binding: `use mpi` (default), `include 'mpif.h'`
! (-DPROBE_MPIF_H) and `use mpi_f08` (-DPROBE_F08), against Open MPI and MPICH. Each rank writes its account of
! the calls to $COLLSCOPE_PROBE_OUT.<rank>, in the lines of mpi_calls_probe.c; run with 2 ranks.
program mpi_fortran_probe
#if defined(PROBE_F08)
  use mpi_f08
#elif !defined(PROBE_MPIF_H)
  use mpi
#endif
  implicit none
#if defined(PROBE_MPIF_H)
  include 'mpif.h'
#endif
#if defined(PROBE_F08)
  type(MPI_Comm) :: split
  type(MPI_Request) :: req(2)
  type(MPI_Status) :: st
#else
  integer :: split, req(2), st(MPI_STATUS_SIZE)
#endif
  integer :: ierr, rank, nranks, right, left, out, i
  integer :: ints(16), intr(16)
  double precision :: d(8), dr(8)
  real :: f(4), fr(4)
  character(len=4096) :: path

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nranks, ierr)
  out = 6
  call get_environment_variable("COLLSCOPE_PROBE_OUT", path)
  if (len_trim(path) > 0) then
    out = 20
    write (path, '(A,".",I0)') trim(path), rank
    open (unit=out, file=trim(path), status='replace', action='write')
  end if
  ints = rank
  d = 1.0d0
  f = 2.0
  right = mod(rank + 1, nranks)
  left = mod(rank + nranks - 1, nranks)

  write (out, '("rank ",I0,": coll barrier comm=world count=0 bytes=0 root=-1")') rank
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  write (out, '("rank ",I0,": coll bcast comm=world count=16 bytes=64 root=0")') rank
  call MPI_Bcast(ints, 16, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
  write (out, '("rank ",I0,": coll allreduce comm=world count=8 bytes=64 root=-1")') rank
  call MPI_Allreduce(d, dr, 8, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  write (out, '("rank ",I0,": coll iallreduce comm=world count=4 bytes=16 root=-1")') rank
  call MPI_Iallreduce(f, fr, 4, MPI_REAL, MPI_MAX, MPI_COMM_WORLD, req(1), ierr)
  call MPI_Wait(req(1), st, ierr)
  write (out, '("rank ",I0,": coll reduce comm=world count=3 bytes=12 root=1")') rank
  call MPI_Reduce(ints, intr, 3, MPI_INTEGER, MPI_SUM, 1, MPI_COMM_WORLD, ierr)
  write (out, '("rank ",I0,": coll allgather comm=world count=2 bytes=",I0," root=-1")') rank, 2 * 4 * nranks
  call MPI_Allgather(ints, 2, MPI_INTEGER, intr, 2, MPI_INTEGER, MPI_COMM_WORLD, ierr)

  call MPI_Comm_split(MPI_COMM_WORLD, mod(rank, 2), rank, split, ierr)
  write (out, '("rank ",I0,": coll allreduce comm=split count=2 bytes=16 root=-1")') rank
  call MPI_Allreduce(d, dr, 2, MPI_DOUBLE_PRECISION, MPI_SUM, split, ierr)
  call MPI_Comm_free(split, ierr)

  if (rank == 0) then
    write (out, '("rank ",I0,": p2p send comm=world count=5 send=1/3/20 recv=-")') rank
    call MPI_Send(ints, 5, MPI_INTEGER, 1, 3, MPI_COMM_WORLD, ierr)
  else if (rank == 1) then
    write (out, '("rank ",I0,": p2p recv comm=world count=5 send=- recv=0/3/20")') rank
    call MPI_Recv(intr, 5, MPI_INTEGER, MPI_ANY_SOURCE, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
  end if
  write (out, '("rank ",I0,": p2p irecv comm=world count=4 send=- recv=",I0,"/4/16")') rank, left
  call MPI_Irecv(fr, 4, MPI_REAL, left, 4, MPI_COMM_WORLD, req(1), ierr)
  write (out, '("rank ",I0,": p2p isend comm=world count=4 send=",I0,"/4/16 recv=-")') rank, right
  call MPI_Isend(f, 4, MPI_REAL, right, 4, MPI_COMM_WORLD, req(2), ierr)
  call MPI_Waitall(2, req, MPI_STATUSES_IGNORE, ierr)
  write (out, '("rank ",I0,": p2p sendrecv comm=world count=6 send=",I0,"/5/24 recv=",I0,"/5/24")') rank, right, left
  call MPI_Sendrecv(ints, 6, MPI_INTEGER, right, 5, intr, 6, MPI_INTEGER, left, 5, MPI_COMM_WORLD, st, ierr)

  write (out, '("rank ",I0,": done")') rank
  if (out /= 6) close (out)
  call MPI_Finalize(ierr)
  i = 0
end program mpi_fortran_probe
