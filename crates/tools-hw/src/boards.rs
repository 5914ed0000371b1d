//! The static board table: what `hardware_info` reports about known development boards, and the
//! memory maps `hardware_memory` checks probe-rs addresses against.

use std::fmt::Write as _;

use serde_json::{Value, json};

/// What kind of memory a region holds, which decides whether `hardware_memory` may write it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RegionKind {
    /// Program flash (written by a flasher, never by a memory write).
    Flash,
    /// Mask ROM (boot loader).
    Rom,
    /// RAM.
    Ram,
    /// Memory-mapped peripheral registers.
    Peripherals,
    /// EEPROM in its own address space.
    Eeprom,
}

impl RegionKind {
    /// Whether a memory write may target the region: RAM and peripheral registers only.
    pub fn writable(self) -> bool {
        matches!(self, RegionKind::Ram | RegionKind::Peripherals)
    }

    /// Lower-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            RegionKind::Flash => "flash",
            RegionKind::Rom => "rom",
            RegionKind::Ram => "ram",
            RegionKind::Peripherals => "peripherals",
            RegionKind::Eeprom => "eeprom",
        }
    }
}

/// One region of a board's memory map.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryRegion {
    /// A short name (`sram`, `flash`).
    pub name: &'static str,
    /// The first address.
    pub start: u64,
    /// Its size in bytes.
    pub size: u64,
    /// What it holds.
    pub kind: RegionKind,
}

impl MemoryRegion {
    /// Whether the `len` bytes at `address` lie wholly inside the region.
    pub fn contains(&self, address: u64, len: u64) -> bool {
        match (self.start.checked_add(self.size), address.checked_add(len)) {
            (Some(end), Some(last)) => address >= self.start && last <= end,
            _ => false,
        }
    }
}

/// A development board.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Board {
    /// The id calls use (`nucleo-f401re`).
    pub id: &'static str,
    /// Other names accepted for it.
    pub aliases: &'static [&'static str],
    /// The product name.
    pub name: &'static str,
    /// The microcontroller.
    pub chip: &'static str,
    /// The CPU core(s) and clock.
    pub core: &'static str,
    /// The probe-rs chip name, when probe-rs can debug it.
    pub probe_rs_chip: Option<&'static str>,
    /// The memory map.
    pub regions: &'static [MemoryRegion],
    /// How one usually talks to it.
    pub notes: &'static str,
}

const KIB: u64 = 1024;
const MIB: u64 = 1024 * KIB;

const fn region(name: &'static str, start: u64, size: u64, kind: RegionKind) -> MemoryRegion {
    MemoryRegion {
        name,
        start,
        size,
        kind,
    }
}

/// The known boards.
pub const BOARDS: &[Board] = &[
    Board {
        id: "nucleo-f401re",
        aliases: &["nucleo-f401", "stm32f401re"],
        name: "ST Nucleo-64 NUCLEO-F401RE",
        chip: "STM32F401RE",
        core: "Arm Cortex-M4F, 84 MHz",
        probe_rs_chip: Some("STM32F401RETx"),
        regions: &[
            region("flash", 0x0800_0000, 512 * KIB, RegionKind::Flash),
            region("system-memory", 0x1FFF_0000, 30 * KIB, RegionKind::Rom),
            region("sram", 0x2000_0000, 96 * KIB, RegionKind::Ram),
            region(
                "peripherals",
                0x4000_0000,
                0x2000_0000,
                RegionKind::Peripherals,
            ),
        ],
        notes: "On-board ST-LINK/V2-1: SWD debug probe plus a virtual COM port (/dev/ttyACM*).",
    },
    Board {
        id: "stm32f4-discovery",
        aliases: &["stm32f4discovery", "stm32f407vg", "stm32f407g-disc1"],
        name: "ST STM32F4DISCOVERY",
        chip: "STM32F407VG",
        core: "Arm Cortex-M4F, 168 MHz",
        probe_rs_chip: Some("STM32F407VGTx"),
        regions: &[
            region("flash", 0x0800_0000, MIB, RegionKind::Flash),
            region("ccm-ram", 0x1000_0000, 64 * KIB, RegionKind::Ram),
            region("system-memory", 0x1FFF_0000, 30 * KIB, RegionKind::Rom),
            region("sram", 0x2000_0000, 128 * KIB, RegionKind::Ram),
            region(
                "peripherals",
                0x4000_0000,
                0x2000_0000,
                RegionKind::Peripherals,
            ),
        ],
        notes: "On-board ST-LINK/V2: SWD debug probe.",
    },
    Board {
        id: "rpi-pico",
        aliases: &["pico", "raspberry-pi-pico", "rp2040"],
        name: "Raspberry Pi Pico",
        chip: "RP2040",
        core: "2x Arm Cortex-M0+, 133 MHz",
        probe_rs_chip: Some("RP2040"),
        regions: &[
            region("rom", 0x0000_0000, 16 * KIB, RegionKind::Rom),
            region("xip-flash", 0x1000_0000, 2 * MIB, RegionKind::Flash),
            region("sram", 0x2000_0000, 264 * KIB, RegionKind::Ram),
            region(
                "apb-peripherals",
                0x4000_0000,
                0x0007_0000,
                RegionKind::Peripherals,
            ),
            region(
                "ahb-peripherals",
                0x5000_0000,
                0x0040_0000,
                RegionKind::Peripherals,
            ),
            region("sio", 0xD000_0000, 4 * KIB, RegionKind::Peripherals),
        ],
        notes: "SWD through a second Pico running debugprobe (or a Raspberry Pi Debug Probe); USB CDC serial (/dev/ttyACM*) when the firmware provides it.",
    },
    Board {
        id: "esp32",
        aliases: &["esp32-devkitc", "esp32-wroom-32"],
        name: "Espressif ESP32 (DevKitC and compatibles)",
        chip: "ESP32",
        core: "2x Xtensa LX6, 240 MHz",
        probe_rs_chip: Some("esp32"),
        regions: &[
            region("flash-data", 0x3F40_0000, 4 * MIB, RegionKind::Flash),
            region(
                "peripherals",
                0x3FF0_0000,
                512 * KIB,
                RegionKind::Peripherals,
            ),
            region("rtc-fast", 0x3FF8_0000, 8 * KIB, RegionKind::Ram),
            region("sram2-dram", 0x3FFA_E000, 200 * KIB, RegionKind::Ram),
            region("sram1-dram", 0x3FFE_0000, 128 * KIB, RegionKind::Ram),
            region("rom0", 0x4000_0000, 384 * KIB, RegionKind::Rom),
            region("sram0-iram", 0x4007_0000, 192 * KIB, RegionKind::Ram),
        ],
        notes: "USB-UART bridge (CP210x or CH340: /dev/ttyUSB*); JTAG needs an external probe (ESP-Prog).",
    },
    Board {
        id: "arduino-uno",
        aliases: &["uno", "atmega328p"],
        name: "Arduino Uno R3",
        chip: "ATmega328P",
        core: "AVR 8-bit, 16 MHz",
        probe_rs_chip: None,
        regions: &[
            region("flash (program space)", 0x0000, 32 * KIB, RegionKind::Flash),
            region("sram (data space)", 0x0100, 2 * KIB, RegionKind::Ram),
            region("eeprom (own space)", 0x0000, KIB, RegionKind::Eeprom),
        ],
        notes: "USB serial through an ATmega16U2 (/dev/ttyACM*); no debug probe support in probe-rs (AVR), program it with avrdude over the serial boot loader.",
    },
];

/// Finds a board by id or alias, ignoring case and `_`/`-`/space differences.
pub fn find_board(name: &str) -> Option<&'static Board> {
    let key = normalise(name);
    BOARDS
        .iter()
        .find(|b| normalise(b.id) == key || b.aliases.iter().any(|a| normalise(a) == key))
}

/// Finds the board whose probe-rs chip is `chip` (ignoring case).
pub(crate) fn board_for_chip(chip: &str) -> Option<&'static Board> {
    BOARDS.iter().find(|b| {
        b.probe_rs_chip
            .is_some_and(|c| c.eq_ignore_ascii_case(chip))
    })
}

fn normalise(s: &str) -> String {
    s.trim()
        .chars()
        .map(|c| match c {
            '_' | ' ' => '-',
            c => c.to_ascii_lowercase(),
        })
        .collect()
}

/// The ids of all boards, comma-separated.
pub(crate) fn board_ids() -> String {
    BOARDS.iter().map(|b| b.id).collect::<Vec<_>>().join(", ")
}

/// A size as `96 KiB`.
pub(crate) fn human_size(bytes: u64) -> String {
    if bytes >= MIB && bytes.is_multiple_of(MIB) {
        format!("{} MiB", bytes / MIB)
    } else if bytes >= KIB && bytes.is_multiple_of(KIB) {
        format!("{} KiB", bytes / KIB)
    } else {
        format!("{bytes} bytes")
    }
}

impl Board {
    /// The board as text for the model.
    pub(crate) fn describe(&self) -> String {
        let mut s = format!(
            "{} — {}: {} ({}); probe-rs chip: {}\n",
            self.id,
            self.name,
            self.chip,
            self.core,
            self.probe_rs_chip
                .unwrap_or("none (probe-rs cannot debug it)")
        );
        for r in self.regions {
            let _ = writeln!(
                s,
                "  {:<22} {:#010x}..{:#010x}  {:>8}  {}{}",
                r.name,
                r.start,
                r.start + r.size,
                human_size(r.size),
                r.kind.as_str(),
                if r.kind.writable() { ", writable" } else { "" }
            );
        }
        let _ = writeln!(s, "  {}", self.notes);
        s
    }

    /// The board as JSON.
    pub(crate) fn to_json(self) -> Value {
        json!({
            "id": self.id,
            "name": self.name,
            "chip": self.chip,
            "core": self.core,
            "probe_rs_chip": self.probe_rs_chip,
            "memory": self.regions.iter().map(|r| json!({
                "name": r.name,
                "start": format!("{:#x}", r.start),
                "size": r.size,
                "kind": r.kind.as_str(),
                "writable": r.kind.writable(),
            })).collect::<Vec<_>>(),
            "notes": self.notes,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn boards_are_found_by_id_and_alias_only() {
        assert_eq!(find_board("nucleo-f401re").unwrap().chip, "STM32F401RE");
        assert_eq!(find_board("NUCLEO_F401RE").unwrap().id, "nucleo-f401re");
        assert_eq!(find_board("pico").unwrap().id, "rpi-pico");
        assert_eq!(find_board("Arduino Uno").unwrap().id, "arduino-uno");
        assert!(find_board("nucleo").is_none(), "no prefix matching");
        assert!(find_board("").is_none());
        assert_eq!(board_for_chip("rp2040").unwrap().id, "rpi-pico");
    }

    #[test]
    fn memory_maps_are_sane() {
        for b in BOARDS {
            for r in b.regions {
                assert!(r.size > 0, "{} {}", b.id, r.name);
                assert!(r.start.checked_add(r.size).is_some(), "{} {}", b.id, r.name);
            }
            // Regions of one address space do not overlap (the AVR EEPROM has its own space).
            let mut spaced: Vec<&MemoryRegion> = b
                .regions
                .iter()
                .filter(|r| r.kind != RegionKind::Eeprom && !r.name.contains("program space"))
                .collect();
            spaced.sort_by_key(|r| r.start);
            for pair in spaced.windows(2) {
                assert!(
                    pair[0].start + pair[0].size <= pair[1].start,
                    "{}: {} overlaps {}",
                    b.id,
                    pair[0].name,
                    pair[1].name
                );
            }
        }
        let sram = find_board("nucleo-f401re").unwrap().regions[2];
        assert!(sram.contains(0x2000_0000, 96 * KIB));
        assert!(!sram.contains(0x2000_0000, 96 * KIB + 1));
        assert!(!sram.contains(u64::MAX, 2));
    }
}
