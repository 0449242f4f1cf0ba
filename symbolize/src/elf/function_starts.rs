//! Function ranges from `.eh_frame`: each FDE covers one function (or a cold part of one).
//! They name no function, but they say where the function holding an unnamed PC starts, so a
//! stripped frame prints as `lib+0xstart` and frames of one function fold together.

use gimli::{BaseAddresses, CieOrFde, EhFrame, NativeEndian, UnwindSection};
use object::{Object, ObjectSection};

/// Sorted, non-overlapping `[start, end)` ranges of the FDEs in `.eh_frame`.
#[derive(Debug, Default)]
pub struct FunctionStarts {
    ranges: Vec<(u64, u64)>,
}

impl FunctionStarts {
    /// Reads every FDE of `.eh_frame`; a section that does not parse gives the FDEs read
    /// before the damage.
    pub fn read(file: &object::File<'_>) -> FunctionStarts {
        let Some(section) = file.section_by_name(".eh_frame") else {
            return FunctionStarts::default();
        };
        let Ok(data) = section.data() else {
            return FunctionStarts::default();
        };
        let eh_frame = EhFrame::new(data, NativeEndian);
        let mut bases = BaseAddresses::default().set_eh_frame(section.address());
        if let Some(text) = file.section_by_name(".text") {
            bases = bases.set_text(text.address());
        }
        if let Some(got) = file.section_by_name(".got") {
            bases = bases.set_got(got.address());
        }
        let mut ranges = Vec::new();
        let mut entries = eh_frame.entries(&bases);
        while let Ok(Some(entry)) = entries.next() {
            if let CieOrFde::Fde(partial) = entry {
                if let Ok(fde) = partial.parse(EhFrame::cie_from_offset) {
                    if fde.len() > 0 {
                        let start = fde.initial_address();
                        ranges.push((start, start.saturating_add(fde.len())));
                    }
                }
            }
        }
        ranges.sort_unstable();
        ranges.dedup_by_key(|r| r.0);
        FunctionStarts { ranges }
    }

    /// The start of the FDE range holding `address`.
    pub fn containing(&self, address: u64) -> Option<u64> {
        let i = self.ranges.partition_point(|r| r.0 <= address);
        let (start, end) = *self.ranges.get(i.checked_sub(1)?)?;
        (address < end).then_some(start)
    }
}
