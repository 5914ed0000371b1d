//! A fake device layer for I2C and SPI: it records every open and every byte the tools send,
//! and answers like simple devices (register files at chosen I2C addresses, an SPI device that
//! returns each byte it receives inverted).

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use tools_hw::{Devices, I2cBus, SpiBus, SpiSettings};

/// One thing the tools asked the device layer to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Op {
    OpenI2c(PathBuf),
    I2cRead {
        address: u8,
        len: usize,
    },
    I2cWrite {
        address: u8,
        bytes: Vec<u8>,
    },
    I2cWriteRead {
        address: u8,
        bytes: Vec<u8>,
        len: usize,
    },
    OpenSpi(PathBuf, SpiSettings),
    SpiTransfer {
        tx: Vec<u8>,
    },
}

#[derive(Debug, Default)]
struct State {
    log: Vec<Op>,
    /// Address → 256 registers and the register pointer.
    chips: BTreeMap<u8, ([u8; 256], u8)>,
}

/// The fake. Buses and devices "exist" when their path is in `present`.
#[derive(Debug, Clone)]
pub(crate) struct FakeDevices {
    state: Arc<Mutex<State>>,
    present: Vec<PathBuf>,
}

impl FakeDevices {
    /// Buses/devices at `present`, chips answering at `chips` (registers `reg[i] = i ^ address`).
    pub(crate) fn new(present: &[&str], chips: &[u8]) -> FakeDevices {
        let mut state = State::default();
        for &a in chips {
            let mut regs = [0u8; 256];
            for (i, r) in regs.iter_mut().enumerate() {
                *r = (i as u8) ^ a;
            }
            state.chips.insert(a, (regs, 0));
        }
        FakeDevices {
            state: Arc::new(Mutex::new(state)),
            present: present.iter().map(PathBuf::from).collect(),
        }
    }

    /// Everything recorded so far.
    pub(crate) fn log(&self) -> Vec<Op> {
        self.state.lock().unwrap().log.clone()
    }

    /// Forgets the log.
    pub(crate) fn clear(&self) {
        self.state.lock().unwrap().log.clear();
    }

    /// Register `reg` of the chip at `address`.
    pub(crate) fn register(&self, address: u8, reg: u8) -> u8 {
        self.state.lock().unwrap().chips[&address].0[reg as usize]
    }

    fn check(&self, path: &Path) -> io::Result<()> {
        if self.present.iter().any(|p| p == path) {
            Ok(())
        } else {
            Err(io::Error::from(io::ErrorKind::NotFound))
        }
    }
}

impl Devices for FakeDevices {
    fn open_i2c(&self, path: &Path) -> io::Result<Box<dyn I2cBus>> {
        self.state
            .lock()
            .unwrap()
            .log
            .push(Op::OpenI2c(path.to_path_buf()));
        self.check(path)?;
        Ok(Box::new(FakeI2c(Arc::clone(&self.state))))
    }

    fn open_spi(&self, path: &Path, settings: &SpiSettings) -> io::Result<Box<dyn SpiBus>> {
        self.state
            .lock()
            .unwrap()
            .log
            .push(Op::OpenSpi(path.to_path_buf(), *settings));
        self.check(path)?;
        Ok(Box::new(FakeSpi(Arc::clone(&self.state))))
    }
}

struct FakeI2c(Arc<Mutex<State>>);

fn nack() -> io::Error {
    io::Error::from_raw_os_error(rustix::io::Errno::NXIO.raw_os_error())
}

impl I2cBus for FakeI2c {
    fn read(&mut self, address: u8, buf: &mut [u8]) -> io::Result<()> {
        let mut s = self.0.lock().unwrap();
        s.log.push(Op::I2cRead {
            address,
            len: buf.len(),
        });
        let (regs, ptr) = s.chips.get_mut(&address).ok_or_else(nack)?;
        for b in buf.iter_mut() {
            *b = regs[*ptr as usize];
            *ptr = ptr.wrapping_add(1);
        }
        Ok(())
    }

    fn write(&mut self, address: u8, bytes: &[u8]) -> io::Result<()> {
        let mut s = self.0.lock().unwrap();
        s.log.push(Op::I2cWrite {
            address,
            bytes: bytes.to_vec(),
        });
        let (regs, ptr) = s.chips.get_mut(&address).ok_or_else(nack)?;
        if let Some((&first, rest)) = bytes.split_first() {
            *ptr = first;
            for &b in rest {
                regs[*ptr as usize] = b;
                *ptr = ptr.wrapping_add(1);
            }
        }
        Ok(())
    }

    fn write_read(&mut self, address: u8, bytes: &[u8], buf: &mut [u8]) -> io::Result<()> {
        let mut s = self.0.lock().unwrap();
        s.log.push(Op::I2cWriteRead {
            address,
            bytes: bytes.to_vec(),
            len: buf.len(),
        });
        let (regs, ptr) = s.chips.get_mut(&address).ok_or_else(nack)?;
        if let Some(&first) = bytes.first() {
            *ptr = first;
        }
        for b in buf.iter_mut() {
            *b = regs[*ptr as usize];
            *ptr = ptr.wrapping_add(1);
        }
        Ok(())
    }
}

struct FakeSpi(Arc<Mutex<State>>);

impl SpiBus for FakeSpi {
    fn transfer(&mut self, tx: &[u8], rx: &mut [u8]) -> io::Result<()> {
        self.0
            .lock()
            .unwrap()
            .log
            .push(Op::SpiTransfer { tx: tx.to_vec() });
        for (r, t) in rx.iter_mut().zip(tx) {
            *r = !t;
        }
        Ok(())
    }
}
