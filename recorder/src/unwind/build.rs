//! Builds a library's compact unwind table ([`Table`]) from its call-frame information:
//! `.eh_frame`, and `.debug_frame` for the code `.eh_frame` does not describe (a library built
//! with `-fno-asynchronous-unwind-tables -g` keeps only the C runtime's few FDEs in
//! `.eh_frame`). Runs off the signal handler
//! (the writer thread), once per library. gimli evaluates the CFI programs; each row becomes one
//! 8-byte [`Rule`] keyed by its start, and a row whose rules the handler cannot follow (a
//! register-based CFA other than sp/fp (rsp/rbp, sp/x29), an unknown DWARF expression, a
//! return address the architecture's rules cannot say (x86_64: anywhere but CFA − 8)) becomes [`Rule::NONE`], where the handler falls back to frame pointers.

use gimli::{
    BaseAddresses, CfaRule, CieOrFde, DebugFrame, EhFrame, LittleEndian, Reader, RegisterRule,
    UnwindContext, UnwindSection,
};
use object::{Object, ObjectSection, ObjectSegment};

use super::rule::{Kind, Row, Rule, SavedRa, SavedRbp, Table};
use crate::arch::dwarf;

/// A built table and what went into it.
#[derive(Debug)]
pub struct Built {
    /// The rules.
    pub table: Table,
    /// Function descriptions (FDEs) read from `.eh_frame`.
    pub eh_frame_fdes: usize,
    /// Function descriptions read from `.debug_frame` (0 if there is none).
    pub debug_frame_fdes: usize,
}

/// Rows of `extra` whose range overlaps no row of `rows` (`rows` sorted by start).
fn not_covered(rows: &[(u64, u64, Rule)], extra: Vec<(u64, u64, Rule)>) -> Vec<(u64, u64, Rule)> {
    extra
        .into_iter()
        .filter(|&(start, end, _)| {
            let i = rows.partition_point(|&(s, _, _)| s < end);
            // The last row starting before `end` must end at or before `start`.
            i.checked_sub(1)
                .and_then(|i| rows.get(i))
                .is_none_or(|&(_, e, _)| e <= start)
        })
        .collect()
}

/// The DWARF expression binutils gives `.plt` entries: CFA = rsp + 8 + ((rip & 15) >= N) << 3,
/// with N as `DW_OP_lit<N>` at index [`PLT_LITERAL_AT`].
const PLT_EXPRESSION: [u8; 11] = [
    0x77, 0x08, // DW_OP_breg7 (rsp) 8
    0x80, 0x00, // DW_OP_breg16 (rip) 0
    0x3f, // DW_OP_lit15
    0x1a, // DW_OP_and
    0x30, // DW_OP_lit<N> (N added)
    0x2a, // DW_OP_ge
    0x33, // DW_OP_lit3
    0x24, // DW_OP_shl
    0x22, // DW_OP_plus
];
const PLT_LITERAL_AT: usize = 6;

/// The offset N if `expression` is `DW_OP_breg7 (rsp) N; DW_OP_deref; DW_OP_plus_uconst 8`
/// (OpenSSL's and BoringSSL's assembly: CFA = the word at rsp + N, + 8).
fn rsp_deref_offset(expression: &[u8]) -> Option<i64> {
    let (&op, rest) = expression.split_first()?;
    if op != 0x77 {
        return None;
    }
    let mut reader = gimli::EndianSlice::new(rest, LittleEndian);
    let offset = reader.read_sleb128().ok()?;
    (reader.slice() == [0x06, 0x23, 0x08]).then_some(offset)
}

/// The threshold N if `expression` is the PLT expression.
fn plt_threshold(expression: &[u8]) -> Option<i64> {
    if expression.len() != PLT_EXPRESSION.len() {
        return None;
    }
    let mut n = None;
    for (i, (&got, &want)) in expression.iter().zip(&PLT_EXPRESSION).enumerate() {
        if i == PLT_LITERAL_AT {
            n = got.checked_sub(want).filter(|&n| n < 32);
        } else if got != want {
            return None;
        }
    }
    n.map(i64::from)
}

/// Where the caller's frame pointer is, from its register rule.
fn saved_fp<T: gimli::ReaderOffset>(rule: RegisterRule<T>) -> SavedRbp {
    match rule {
        // Unmentioned callee-saved registers keep their value (the ABIs' convention).
        RegisterRule::Undefined | RegisterRule::SameValue => SavedRbp::Unchanged,
        RegisterRule::Offset(o) if o < 0 && o % 8 == 0 && -o / 8 < 255 => {
            SavedRbp::At((-o / 8) as u8)
        }
        _ => SavedRbp::Lost,
    }
}

/// Where the return address is, from its column's rule; `None`: the outermost frame.
/// x86_64's is pushed by the call (at CFA − 8 unless the function says otherwise). aarch64's
/// stays in x30 until a function saves it, and an unmentioned x30 is the norm (a leaf, a
/// prologue): gimli cannot tell it from `.cfi_undefined x30` (the outermost frame), so the
/// walk tells them apart (a frame pointer of 0 at the outermost frame).
fn saved_ra<T: gimli::ReaderOffset>(rule: RegisterRule<T>) -> Option<SavedRa> {
    Some(match rule {
        RegisterRule::Offset(o) if o < 0 && o % 8 == 0 && -o / 8 < 255 => {
            SavedRa::At((-o / 8) as u8)
        }
        RegisterRule::Undefined if crate::arch::RULE_RA_BITS == 0 => return None,
        RegisterRule::Undefined | RegisterRule::SameValue => SavedRa::InLink,
        _ => SavedRa::Lost,
    })
}

/// The handler's rule for one row of the CFI table.
fn rule_of<R: Reader, S: UnwindSection<R>>(
    row: &gimli::UnwindTableRow<R::Offset>,
    section: &S,
    signal_trampoline: bool,
) -> Rule {
    if signal_trampoline {
        return Rule::new(Kind::Signal, SavedRbp::Unchanged, 0).unwrap_or(Rule::NONE);
    }
    let Some(ra) = saved_ra(row.register(dwarf::RA)) else {
        return Rule::new(Kind::End, SavedRbp::Unchanged, 0).unwrap_or(Rule::NONE);
    };
    let rbp = saved_fp(row.register(dwarf::FP));
    let rule = match row.cfa() {
        CfaRule::RegisterAndOffset { register, offset } if *register == dwarf::SP => {
            Rule::new(Kind::Rsp, rbp, *offset)
        }
        CfaRule::RegisterAndOffset { register, offset } if *register == dwarf::FP => {
            Rule::new(Kind::Rbp, rbp, *offset)
        }
        CfaRule::Expression(e) if dwarf::CFA_EXPRESSIONS => {
            let bytes = e
                .get(section)
                .ok()
                .and_then(|e| e.0.to_slice().ok().map(|b| b.to_vec()));
            bytes.and_then(|b| match plt_threshold(&b) {
                Some(n) => Rule::new(Kind::Plt, rbp, n),
                None => rsp_deref_offset(&b).and_then(|n| Rule::new(Kind::RspDeref, rbp, n)),
            })
        }
        CfaRule::Expression(_) | CfaRule::RegisterAndOffset { .. } => None,
    };
    rule.and_then(|r| r.with_ra(ra)).unwrap_or(Rule::NONE)
}

/// `(start, end, rule)` in ELF addresses for every row of every FDE of `section`.
fn section_rows<R: Reader, S: UnwindSection<R>>(
    section: &S,
    bases: &BaseAddresses,
) -> (Vec<(u64, u64, Rule)>, usize) {
    let mut ctx = UnwindContext::new();
    let mut rows = Vec::new();
    let mut fdes = 0usize;
    let mut entries = section.entries(bases);
    // A malformed entry ends the section (its length cannot be trusted); what was read stays.
    while let Ok(Some(entry)) = entries.next() {
        let CieOrFde::Fde(partial) = entry else {
            continue;
        };
        let Ok(fde) = partial.parse(|s, b, o| s.cie_from_offset(b, o)) else {
            continue;
        };
        fdes += 1;
        let signal = fde.is_signal_trampoline();
        let Ok(mut table) = fde.rows(section, bases, &mut ctx) else {
            continue;
        };
        while let Ok(Some(row)) = table.next_row() {
            rows.push((
                row.start_address(),
                row.end_address(),
                rule_of(row, section, signal),
            ));
        }
    }
    (rows, fdes)
}

/// The ELF address mapped at the library's lowest address: the page start of the loadable
/// segment whose file offset is the mapping's (`file_offset`).
fn load_address(elf: &object::File<'_>, file_offset: u64, page_size: u64) -> Option<u64> {
    let mask = !(page_size - 1);
    elf.segments().find_map(|s| {
        let (offset, _) = s.file_range();
        (offset & mask == file_offset).then_some(s.address() & mask)
    })
}

/// The table of an ELF image (`data`: the file, or the vDSO as mapped) whose lowest mapping,
/// at file offset `file_offset`, starts at runtime address `base`.
pub fn build(data: &[u8], base: u64, file_offset: u64, page_size: u64) -> Result<Built, String> {
    let elf = object::File::parse(data).map_err(|e| format!("not an ELF file: {e}"))?;
    if elf.architecture() != crate::arch::ELF_ARCHITECTURE {
        return Err(format!("not an {} ELF file", crate::arch::NAME));
    }
    let load = load_address(&elf, file_offset, page_size)
        .ok_or("no loadable segment at the mapped file offset")?;
    let section = |name: &str| {
        elf.section_by_name(name)
            .and_then(|s| Some((s.address(), s.uncompressed_data().ok()?)))
            .filter(|(_, d)| !d.is_empty())
    };
    let address_of = |name: &str| elf.section_by_name(name).map(|s| s.address());
    let (mut rows, eh_frame_fdes) = match section(".eh_frame") {
        Some((address, data)) => {
            let mut bases = BaseAddresses::default().set_eh_frame(address);
            if let Some(text) = address_of(".text") {
                bases = bases.set_text(text);
            }
            if let Some(got) = address_of(".got") {
                bases = bases.set_got(got);
            }
            let mut eh_frame = EhFrame::new(&data, LittleEndian);
            eh_frame.set_vendor(dwarf::VENDOR);
            section_rows(&eh_frame, &bases)
        }
        None => (Vec::new(), 0),
    };
    rows.sort_by_key(|&(start, _, _)| start);
    let debug_frame_fdes = match section(".debug_frame") {
        Some((_, data)) => {
            let mut debug = DebugFrame::new(&data, LittleEndian);
            debug.set_address_size(8);
            debug.set_vendor(dwarf::VENDOR);
            let (extra, fdes) = section_rows(&debug, &BaseAddresses::default());
            let extra = not_covered(&rows, extra);
            rows.extend(extra);
            fdes
        }
        None => 0,
    };
    if eh_frame_fdes + debug_frame_fdes == 0 {
        return Err("no call-frame information (.eh_frame or .debug_frame)".into());
    }
    Ok(Built {
        table: Table::new(base, table_rows(rows, load)),
        eh_frame_fdes,
        debug_frame_fdes,
    })
}

/// Rows keyed by offset from `load` (the ELF address of the table's base): each FDE row's
/// rule from its start, and [`Rule::NONE`] after the end of each FDE unless another starts
/// there. Rows outside 0..4 GiB of `load` are dropped.
fn table_rows(mut rows: Vec<(u64, u64, Rule)>, load: u64) -> Vec<Row> {
    let offset = |a: u64| a.checked_sub(load).and_then(|o| u32::try_from(o).ok());
    rows.sort_by_key(|&(start, _, _)| start);
    let mut out = Vec::with_capacity(rows.len() * 2);
    for (i, &(start, end, rule)) in rows.iter().enumerate() {
        let (Some(start), Some(end)) = (offset(start), offset(end)) else {
            continue;
        };
        out.push(Row {
            offset: start,
            rule,
        });
        let next_start = rows.get(i + 1).and_then(|&(s, _, _)| offset(s));
        if next_start != Some(end) {
            out.push(Row {
                offset: end,
                rule: Rule::NONE,
            });
        }
    }
    // An FDE overlapping the next one: keep the order by start (the later FDE wins).
    out.sort_by_key(|r| r.offset);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognises_the_plt_expression() {
        let mut e = PLT_EXPRESSION;
        e[PLT_LITERAL_AT] = 0x3b;
        assert_eq!(plt_threshold(&e), Some(11));
        e[PLT_LITERAL_AT] = 0x3a;
        assert_eq!(plt_threshold(&e), Some(10));
        e[0] = 0x78;
        assert_eq!(plt_threshold(&e), None);
        assert_eq!(plt_threshold(&PLT_EXPRESSION[..5]), None);
    }

    #[test]
    fn recognises_a_cfa_kept_in_the_frame() {
        // BoringSSL's bn_powerx5: DW_OP_breg7 (rsp) 40; DW_OP_deref; DW_OP_plus_uconst 8.
        assert_eq!(rsp_deref_offset(&[0x77, 40, 0x06, 0x23, 0x08]), Some(40));
        // A two-byte SLEB128 offset.
        assert_eq!(
            rsp_deref_offset(&[0x77, 0x80, 0x01, 0x06, 0x23, 0x08]),
            Some(128)
        );
        // Another register, another addend, no deref: not this rule.
        assert_eq!(rsp_deref_offset(&[0x76, 40, 0x06, 0x23, 0x08]), None);
        assert_eq!(rsp_deref_offset(&[0x77, 40, 0x06, 0x23, 0x10]), None);
        assert_eq!(rsp_deref_offset(&[0x77, 40, 0x23, 0x08]), None);
    }

    #[test]
    fn fde_gaps_fall_back_to_frame_pointers() {
        let a = Rule::new(Kind::Rsp, SavedRbp::Unchanged, 8).unwrap();
        let b = Rule::new(Kind::Rsp, SavedRbp::Unchanged, 16).unwrap();
        let rows = table_rows(
            vec![
                (0x1020, 0x1030, b),
                (0x1000, 0x1010, a),
                (0x1010, 0x1020, b),
            ],
            0x1000,
        );
        let t = Table::new(0x40_0000, rows);
        assert_eq!(t.rule(0x40_0000), a);
        assert_eq!(t.rule(0x40_0015), b);
        assert_eq!(t.rule(0x40_002f), b);
        assert_eq!(t.rule(0x40_0030), Rule::NONE);
    }

    #[test]
    fn debug_frame_rows_fill_only_what_eh_frame_leaves_out() {
        let a = Rule::new(Kind::Rsp, SavedRbp::Unchanged, 8).unwrap();
        let eh = vec![(0x100, 0x110, a), (0x200, 0x240, a)];
        let extra = vec![(0x100, 0x108, a), (0x150, 0x160, a), (0x230, 0x250, a)];
        assert_eq!(not_covered(&eh, extra), vec![(0x150, 0x160, a)]);
    }

    /// A library built with `-fno-asynchronous-unwind-tables -g`: its functions are described
    /// in `.debug_frame` only.
    #[test]
    fn a_library_with_only_debug_frame_gets_rules() {
        let dir =
            std::env::temp_dir().join(format!("jfrnative-debug-frame-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let lib = crate::test_lib::build(
            &dir,
            "libdf.so",
            "int leaf(int a) { return a * 3; }\n\
             __attribute__((noinline)) int mid(int a) { return leaf(a) + 1; }\n\
             int outer(int a) { int r = mid(a) + 1; return r * 2 + mid(r); }\n",
            &[
                "-O2",
                "-g",
                "-fno-asynchronous-unwind-tables",
                "-fno-unwind-tables",
            ],
        );
        let data = std::fs::read(&lib).unwrap();
        let built = build(&data, 0x7000_0000_0000, 0, 4096).unwrap();
        assert!(
            built.debug_frame_fdes >= 3,
            "{} FDEs",
            built.debug_frame_fdes
        );
        let elf = object::File::parse(&*data).unwrap();
        use object::ObjectSymbol;
        for name in ["leaf", "mid", "outer"] {
            let symbol = object::Object::symbols(&elf)
                .find(|s| s.name() == Ok(name))
                .unwrap();
            let rule = built.table.rule(0x7000_0000_0000 + symbol.address());
            assert_eq!((rule.kind(), rule.cfa_offset()), (Kind::Rsp, 8), "{name}");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
