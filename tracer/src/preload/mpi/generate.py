#!/usr/bin/env python3
"""Generates collscope's MPI interposer from functions.txt (the one table of prototypes with argument roles).

    generate.py functions.txt OUT_DIR

writes, into OUT_DIR:
  mpi_functions.hpp   ABI-neutral: function ids, the real symbol of each, the exported entry points
  mpi_trampolines.inc the exported entry points: each jumps through its slot (mpi/dispatch.cpp binds the slots
                      to the wrappers of the job's MPI ABI, or to the real functions)
  mpi_prototypes.inc  the real functions' types, per ABI (included inside that ABI's namespace)
  mpi_wrappers.inc    the wrappers, per ABI (included inside that ABI's namespace after mpi/abi_body.hpp)
"""
import re
import sys
from pathlib import Path

# Roles that describe the bytes of a collective: what they set in the Shape's Amount (mpi/abi_body.hpp).
AMOUNT_ROLES = {"elems": ("elements", None), "elems*n": ("elements", "CommSize"), "elems*out": ("elements", "OutDegree"),
                "sum": ("counts", "CommSize"), "sum_out": ("counts", "OutDegree"), "wcounts": ("counts", "CommSize"),
                "wcounts_out": ("counts", "OutDegree"), "type": ("type", None), "wtypes": ("types", None)}
IN_PLACE_ROLES = {"ip" + r: v for r, v in AMOUNT_ROLES.items()}
COUNT_ROLES = ({"count", "cnt", "rcount"} | {r for r, v in AMOUNT_ROLES.items() if v[0] != "type" and v[0] != "types"}
               | {r for r, v in IN_PLACE_ROLES.items() if v[0] not in ("type", "types")})
KNOWN_ROLES = COUNT_ROLES | set(AMOUNT_ROLES) | set(IN_PLACE_ROLES) | {
    "comm", "reduce", "root", "buf", "send", "recv", "dsp", "dst", "src", "tag", "rtag", "rtype", "status", "flag",
    "message", "newcomm", "color", "request"}
KINDS = {"coll", "send", "recv", "sendrecv", "probe", "mprobe", "mrecv", "comm_new", "custom", "helper"}
MESSAGE_KINDS = {"send", "recv", "sendrecv", "mrecv"}


class Param:
    def __init__(self, text):
        decl, _, roles = text.partition(":")
        self.roles = [r.strip() for r in roles.split("+") if r.strip()]
        for r in self.roles:
            if r not in KNOWN_ROLES:
                sys.exit(f"functions.txt: unknown role '{r}' in '{text}'")
        decl = decl.strip()
        m = re.match(r"^(.*?)(\w+)\s*(\[\])?$", decl)
        if not m:
            sys.exit(f"functions.txt: cannot parse argument '{text}'")
        self.type = m.group(1).strip()
        self.name = m.group(2)
        self.array = bool(m.group(3))

    def decl(self):
        return f"{self.type} {self.name}{'[]' if self.array else ''}"

    def large(self):
        """The same argument in a large-count (_c) form."""
        p = Param.__new__(Param)
        p.__dict__.update(self.__dict__)
        if COUNT_ROLES & set(self.roles):
            p.type = p.type.replace("int", "MPI_Count")
        elif "dsp" in self.roles:
            p.type = p.type.replace("int", "MPI_Aint")
        return p


class Form:
    """One C entry point: a row of the table in one of its variants."""

    def __init__(self, row, name, prefix, params, behaviour, op, mpi4):
        self.row, self.name, self.prefix, self.params = row, name, prefix, params
        self.behaviour, self.op, self.mpi4 = behaviour, op, mpi4
        self.large = False

    @property
    def ident(self):  # C++ identifier of the function id
        return f"k{self.prefix.capitalize()}_{self.name}"

    @property
    def symbol(self):
        return f"{self.prefix}_{self.name}"


def camel(name):
    return "".join(part[:1].upper() + part[1:] for part in name.split("_"))


def parse(path):
    rows = []
    for lineno, line in enumerate(Path(path).read_text().splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        m = re.match(r"^(\w+)\s+(\w+)\s*(\[[^\]]*\])?\s*\((.*)\)\s*$", line)
        if not m or m.group(1) not in KINDS:
            sys.exit(f"functions.txt:{lineno}: cannot parse '{line}'")
        kind, name, variants, args = m.group(1), m.group(2), m.group(3), m.group(4).strip()
        variants = [v.strip() for v in (variants or "[]")[1:-1].split(",") if v.strip()]
        params = [] if args in ("", "void") else [Param(a) for a in split_args(args)]
        rows.append((kind, name, variants, params))
    return rows


def split_args(args):
    return [a.strip() for a in args.split(",") if a.strip()]


def request_param():
    return Param("MPI_Request* request:request")


def forms_of(row):
    kind, name, variants, params = row
    out = []
    if kind in ("custom", "helper"):
        return [Form(row, name, "MPI", params, kind, None, False)]
    if kind == "comm_new":
        return [Form(row, name, "MPI", params, "comm_new", None, False)]
    blocking = "coll_blocking" if kind == "coll" else "message_blocking"
    out.append(Form(row, name, "MPI", params, blocking, camel(name), False))
    no_status = [p for p in params if "status" not in p.roles]
    iname = "I" + name[0].lower() + name[1:]
    if "i" in variants or "i4" in variants:
        mpi4 = "i4" in variants
        if kind == "coll":
            out.append(Form(row, iname, "MPI", params + [request_param()], "coll_posted", camel(iname), mpi4))
        elif kind in ("probe", "mprobe"):
            flagged = []
            for p in params:
                if "message" in p.roles or "status" in p.roles:
                    if not any("flag" in q.roles for q in flagged):
                        flagged.append(Param("int* flag:flag"))
                flagged.append(p)
            out.append(Form(row, iname, "MPI", flagged, "probe_polled", camel(iname), mpi4))
        else:
            out.append(Form(row, iname, "MPI", no_status + [request_param()], "message_posted", camel(iname), mpi4))
    if "init" in variants:
        init = name + "_init"
        if kind == "coll":
            init_params = params + [Param("MPI_Info info"), request_param()]
            out.append(Form(row, init, "MPI", init_params, "coll_persistent", camel(name) + "Init", True))
            if "x" in variants:
                out.append(Form(row, init, "MPIX", init_params, "coll_persistent", camel(name) + "Init", False))
        else:
            out.append(Form(row, init, "MPI", no_status + [request_param()], "message_persistent",
                            camel(name) + "Init", False))
    if "c" in variants:
        for f in [f for f in out if f.prefix == "MPI"]:
            c = Form(row, f.name + "_c", "MPI", [p.large() for p in f.params], f.behaviour, f.op, True)
            c.large = True
            out.append(c)
    return out


def arg_list(form, substitute_status=False):
    """The real call's arguments; the wrappers that read a status pass theirs (s.status) in its place."""
    return ", ".join("s.status" if substitute_status and "status" in p.roles else p.name for p in form.params)


def shape_lines(form):
    """Statements filling the wrapper's shape (mpi/abi_collectives.hpp, abi_messages.hpp) from the roles."""
    collective = form.row[0] == "coll"
    lines = [f"s.op = Op::{form.op};"]
    for p in form.params:
        n = p.name
        for r in p.roles:
            if collective and (r in AMOUNT_ROLES or r in IN_PLACE_ROLES):
                field, per = AMOUNT_ROLES.get(r) or IN_PLACE_ROLES[r]
                target = "s.in_place" if r in IN_PLACE_ROLES else "s.amount"
                if field == "type":
                    lines.append(f"{target}.set_type({n});")
                    if target == "s.amount":
                        side = "Send" if n.startswith("send") else "Recv" if n.startswith("recv") else "Both"
                        lines.append(f"s.amount_side = Side::{side};")
                elif field == "types":
                    lines.append(f"{target}.types = {n};")
                elif field == "counts":
                    lines.append(f"{target}.counts = {n};")
                    lines.append(f"{target}.counts_large = {'true' if form.large else 'false'};")
                else:
                    lines.append(f"{target}.elements = {n};")
                if per:
                    lines.append(f"{target}.per = Per::{per};")
            elif not collective and r == "type": lines.append(f"s.set_type({n});")
            elif not collective and r.startswith("elems"): pass  # a message's bytes: count x size of its type
            elif r == "comm": lines.append(f"s.comm = {n};")
            elif r == "rtype": lines.append(f"s.set_recv_type({n});")
            elif r == "reduce": lines.append(f"s.set_reduce({n});")
            elif r == "root": lines.append(f"s.root = {n};")
            elif r == "buf": lines.append(f"s.sendbuf = {n};"); lines.append(f"s.recvbuf = {n};")
            elif r == "send": lines.append(f"s.sendbuf = {n};")
            elif r == "recv": lines.append(f"s.recvbuf = {n};")
            elif r == "count":
                if p.array: lines.append("s.count_is_sum = true;")
                else: lines.append(f"s.count = {n};")
            elif r == "dst": lines.append(f"s.dst = {n};")
            elif r == "src": lines.append(f"s.src = {n};")
            elif r == "tag": lines.append(f"s.send_tag = {n};")
            elif r == "rtag": lines.append(f"s.recv_tag = {n};")
            elif r == "rcount": lines.append(f"s.recv_count = {n};")
            elif r == "status": lines.append(f"s.status = {n};")
            elif r == "message": lines.append(f"s.message = {n};")
    if form.row[0] == "mrecv":
        lines.append("s.receives = true;")
    return lines


def role_arg(form, role):
    for p in form.params:
        if role in p.roles:
            return p.name
    sys.exit(f"functions.txt: {form.symbol} needs an argument with role '{role}'")


def wrapper(form):
    decl = ", ".join(p.decl() for p in form.params) or "void"
    call = f"real({arg_list(form)})"
    head = [f"int w_{form.prefix}_{form.name}({decl}) {{",
            f"  const auto real = reinterpret_cast<fn_{form.name}_{form.prefix}>(g_mpi_real[{form.ident}]);"]
    b = form.behaviour
    if b == "custom":
        return [f"int custom_{form.name}({decl});"]
    if b == "comm_new":
        color = next((p.name for p in form.params if "color" in p.roles), None)
        body = [f"  return comm_created(\"{form.name.lower().removeprefix('comm_')}\", {role_arg(form, 'comm')}, {role_arg(form, 'newcomm')},"
                f" {'std::optional<std::int64_t>(' + color + ')' if color else 'std::nullopt'}, [&] {{ return {call}; }});"]
        return head + body + ["}"]
    shape = "CollectiveShape" if form.row[0] == "coll" else "MessageShape"
    body = ["  if (!tracing_this_call()) return " + call + ";", f"  {shape} s;"]
    body += ["  " + l for l in shape_lines(form)]
    lam = f"[&] {{ return real({arg_list(form, substitute_status=True)}); }}"
    if b in ("coll_blocking", "message_blocking"):
        body.append(f"  return {b.replace('coll_blocking', 'collective_blocking')}(s, {lam});")
    elif b in ("coll_posted", "message_posted"):
        fn = "collective_posted" if b == "coll_posted" else "message_posted"
        body.append(f"  return {fn}(s, {role_arg(form, 'request')}, {lam});")
    elif b in ("coll_persistent", "message_persistent"):
        fn = "collective_persistent" if b == "coll_persistent" else "message_persistent"
        body.append(f"  return {fn}(s, {role_arg(form, 'request')}, {lam});")
    elif b == "probe_polled":
        body.append(f"  return probe_polled(s, {role_arg(form, 'flag')}, {lam});")
    else:
        sys.exit(f"generate.py: no behaviour {b}")
    return head + body + ["}"]


def generate(table, out_dir):
    forms = [f for row in parse(table) for f in forms_of(row)]
    seen = set()
    for f in forms:
        if f.symbol in seen:
            sys.exit(f"functions.txt: {f.symbol} twice")
        seen.add(f.symbol)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    exported = [f for f in forms if f.behaviour != "helper"]
    note = "// Generated by tracer/src/preload/mpi/generate.py from functions.txt: edit those, not this file.\n"

    h = [note, "#pragma once", "#include <cstdint>", "", "namespace collscope::tracer {", "",
         "enum MpiFunction : std::uint16_t {"]
    h += [f"  {f.ident}," for f in forms] + ["  kMpiFunctionCount", "};", ""]
    h.append("// The real function each wrapper calls (the profiling name) and the name a pass-through exports.")
    h.append("inline constexpr const char* kMpiProfilingName[kMpiFunctionCount] = {")
    h += [f'    "P{f.symbol}",' for f in forms] + ["};"]
    h.append("inline constexpr const char* kMpiName[kMpiFunctionCount] = {")
    h += [f'    "{f.symbol}",' for f in forms] + ["};", ""]
    h.append("// Entry points the preload exports, slot by slot: MPI_X and PMPI_X for every interposed function.")
    h.append("struct MpiExport {\n  const char* symbol;\n  MpiFunction function;\n};")
    h.append("inline constexpr MpiExport kMpiExports[] = {")
    for f in exported:
        h.append(f'    {{"{f.symbol}", {f.ident}}},')
        h.append(f'    {{"P{f.symbol}", {f.ident}}},')
    h += ["};", f"inline constexpr int kMpiExportCount = {2 * len(exported)};", "", "}  // namespace collscope::tracer", ""]
    (out / "mpi_functions.hpp").write_text("\n".join(h))

    # Trampolines: the slot index in a scratch register (the lazy and missing stubs read it), then an indirect jump
    # through the slot. Arguments, stack and return address are untouched, whatever the ABI's types.
    x86 = [".text"]
    arm = [".text"]
    for i, f in enumerate(exported):
        for j, sym in enumerate((f.symbol, "P" + f.symbol)):
            slot = 2 * i + j
            for lines, kind in ((x86, "@function"), (arm, "%function")):
                lines += [f".globl {sym}", f".type {sym}, {kind}", ".p2align 4", f"{sym}:"]
            x86 += [f"  movl ${slot}, %r11d", f"  jmp *collscope_mpi_slots+{8 * slot}(%rip)", f".size {sym}, .-{sym}"]
            arm += [f"  mov w17, #{slot}", f"  adrp x16, collscope_mpi_slots+{8 * slot}",
                    f"  ldr x16, [x16, #:lo12:collscope_mpi_slots+{8 * slot}]", "  br x16", f".size {sym}, .-{sym}"]
    t = [note, "#if defined(__x86_64__)", 'asm(R"(', *x86, ')");', "#elif defined(__aarch64__)", 'asm(R"(', *arm, ')");',
         "#else", '#error "collscope: MPI entry points are written for x86-64 and AArch64 only"', "#endif", ""]
    (out / "mpi_trampolines.inc").write_text("\n".join(t))

    # Per ABI, part 1: the prototypes (the real functions' types), checked against the ABI's mpi.h where it
    # declares them (COLLSCOPE_MPI_PROTOTYPES: the MPI version of its prototypes, 0 for none).
    pr = [note, "// Included inside one ABI's namespace, after that ABI's mpi.h (mpi/abi_open_mpi.cpp, ...).", ""]
    for f in forms:
        decl = ", ".join(p.decl() for p in f.params) or "void"
        pr.append(f"using fn_{f.name}_{f.prefix} = int (*)({decl});")
    pr.append("")
    for f in forms:
        if f.prefix != "MPI":
            continue
        guard = "COLLSCOPE_MPI_PROTOTYPES >= 4" if f.mpi4 else "COLLSCOPE_MPI_PROTOTYPES >= 3"
        pr.append(f"#if {guard}\nstatic_assert(std::is_same_v<decltype(&::P{f.symbol}), fn_{f.name}_{f.prefix}>,"
                  f" \"functions.txt: {f.symbol} differs from mpi.h\");\n#endif")
    pr.append("")
    pr.append("// The type of each real function (mpi/abi_body.hpp: real<F>()).")
    pr.append("template <MpiFunction F> struct RealOf;")
    for f in forms:
        pr.append(f"template <> struct RealOf<{f.ident}> {{ using type = fn_{f.name}_{f.prefix}; }};")
    pr.append("")
    (out / "mpi_prototypes.inc").write_text("\n".join(pr))

    # Per ABI, part 2: the wrappers (after mpi/abi_body.hpp), and the table of them.
    w = [note, "// Included inside one ABI's namespace, after mpi/abi_body.hpp.", ""]
    for f in exported:
        w += wrapper(f)
        w.append("")
    w.append("// The wrapper of each function, in MpiFunction order (null: not interposed).")
    w.append("void* const kWrappers[kMpiFunctionCount] = {")
    for f in forms:
        if f.behaviour == "helper":
            w.append("    nullptr,")
        elif f.behaviour == "custom":
            w.append(f"    reinterpret_cast<void*>(&custom_{f.name}),")
        else:
            w.append(f"    reinterpret_cast<void*>(&w_{f.prefix}_{f.name}),")
    w += ["};", ""]
    (out / "mpi_wrappers.inc").write_text("\n".join(w))


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    generate(sys.argv[1], sys.argv[2])
