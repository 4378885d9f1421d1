/*!
Which table a vertical study runs on, as the dashboard announces it (`vvi-data/announce`, sent to
each party just before `vvi/start`), and how a party gets its block of it.

- [`VviData::Generated`]: the seeded Adult-like table ([`adult_like`]); every party draws it and
  keeps its own columns. Anyone with the seed could redraw it: it stands in for private data.
- [`VviData::Cps1988`]: CPS1988 served with the app (`cps1988.csv`, copied into `dist/` by trunk
  from `data/`), with the crate's default vertical split and public schema
  ([`cps1988::schema`]: bounds and category labels fixed a priori, never read from the data).
  Each party's worker fetches the file and keeps only its own columns ([`cps1988_block`]).
- [`VviData::Own`]: each party's own CSV column block, loaded on its tab, read against CPS1988's
  public schema (the announced columns, bounds and labels) and the announced row count N
  ([`crate::studies::vertical_vi::own`]). Nothing of it is public.

The first two tables are public, which is why the dashboard may redraw (or fetch) the test rows
and follow the test NLL ([`test_blocks`]); with the parties' own columns it cannot.
*/

use capelab_core::codec;
use capelab_core::study::StudyId;
use capelab_vertical_vi::cps1988;
use capelab_vertical_vi::model::generate::{adult_like, adult_like_schema};
use capelab_vertical_vi::schema::{PartyBlock, Schema};
use capelab_vertical_vi::table::{self, select_rows};
use serde::{Deserialize, Serialize};

/// The kind of the data announcement (the dashboard's own, ahead of `vvi/start`).
pub const DATA_KIND: &str = "vvi-data/announce";

/// CPS1988 next to the app (relative to the page; the relay sends its precompressed copy).
pub const CPS1988_URL: &str = "cps1988.csv";

/// The table a run is on.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub enum VviData {
    /// The seeded Adult-like table of `rows` rows.
    Generated { rows: usize, seed: u64 },
    /// CPS1988 (28 155 rows), each party its columns of the default split.
    Cps1988,
    /// Each party's own columns of `rows` rows (aligned by position), against CPS1988's schema.
    Own { rows: usize },
}

impl VviData {
    /// The public schema every tab checks the task against.
    pub fn schema(&self) -> Schema {
        match self {
            VviData::Generated { .. } => adult_like_schema(),
            VviData::Cps1988 | VviData::Own { .. } => cps1988::schema(),
        }
    }

    /// N, the rows every party holds (aligned by position).
    pub fn rows(&self) -> usize {
        match *self {
            VviData::Generated { rows, .. } => rows,
            VviData::Cps1988 => cps1988::ROWS,
            VviData::Own { rows } => rows,
        }
    }

    /// The file a party fetches for its block, if any (relative to the page).
    pub fn file(&self) -> Option<&'static str> {
        match self {
            VviData::Generated { .. } | VviData::Own { .. } => None,
            VviData::Cps1988 => Some(CPS1988_URL),
        }
    }

    /// Party p's block: drawn from the seed, or cut from the fetched joined file `joined`. (Own
    /// columns are read from the party's own text: [`crate::studies::vertical_vi::own::own_block`].)
    pub fn block(&self, party: usize, joined: Option<&str>) -> Result<PartyBlock, String> {
        match *self {
            VviData::Generated { rows, seed } => adult_like(rows, seed)
                .blocks
                .into_iter()
                .nth(party)
                .ok_or_else(|| format!("the generated table has no party {party}")),
            VviData::Cps1988 => cps1988_block(joined.ok_or("CPS1988 was not fetched")?, party),
            VviData::Own { .. } => Err("a party's own columns come from its own file".into()),
        }
    }
}

/// Party p's columns of the joined CPS1988 file, encoded against the public schema. The joined
/// text passes through here (it is a public file, fetched whole); only party p's columns are
/// read into a block, and only that block is returned to be kept.
pub fn cps1988_block(joined: &str, party: usize) -> Result<PartyBlock, String> {
    let (texts, _) = cps1988::split_joined(joined).map_err(|e| format!("{CPS1988_URL}: {e}"))?;
    let schema = cps1988::schema();
    let own = schema.parties.get(party).ok_or_else(|| format!("CPS1988 has no party {party}"))?;
    let read = table::read_party(own, &texts[party]).map_err(|e| format!("{CPS1988_URL}: {e}"))?;
    Ok(read.block)
}

/// Every party's block of the whole table, for the dashboard's test NLL and its real marginals.
/// Possible only because the table is public: generated from the announced seed, or CPS1988
/// fetched whole; `None` for the parties' own columns, of which no tab holds a whole row.
pub fn public_blocks(
    data: &VviData,
    joined: Option<&str>,
) -> Result<Option<Vec<PartyBlock>>, String> {
    Ok(Some(match data {
        VviData::Generated { rows, seed } => adult_like(*rows, *seed).blocks,
        VviData::Cps1988 => {
            let joined = joined.ok_or("CPS1988 was not fetched")?;
            let (tables, _) = cps1988::load(joined).map_err(|e| format!("{CPS1988_URL}: {e}"))?;
            tables.into_iter().map(|t| t.block).collect()
        }
        VviData::Own { .. } => return Ok(None),
    }))
}

/// The test rows (`test` indices) of every party's block of [`public_blocks`], for the test NLL.
pub fn test_blocks(blocks: &[PartyBlock], test: &[usize]) -> Vec<PartyBlock> {
    blocks.iter().map(|b| select_rows(b, test)).collect()
}

/// The data source the dashboard's form picks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum VviSource {
    /// A generated table from a fresh public seed (N from the form).
    #[default]
    Generated,
    /// CPS1988, each party its own columns (N = 28 155).
    Cps1988,
    /// Each party's own CSV columns (CPS1988's schema, N from the form).
    Own,
}

impl VviSource {
    /// The table announced for a run: `rows` and `seed` matter only for a generated one.
    pub fn data(self, rows: usize, seed: u64) -> VviData {
        match self {
            VviSource::Generated => VviData::Generated { rows, seed },
            VviSource::Cps1988 => VviData::Cps1988,
            VviSource::Own => VviData::Own { rows },
        }
    }
}

/// Which table the run `study` is on, and the seed every tab draws the synthetic twin with (so
/// each party's CSV and the dashboard's table are the same twin): public, sent to every party
/// before the task.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DataAnnouncement {
    pub study: StudyId,
    pub data: VviData,
    pub twin_seed: u64,
}

impl DataAnnouncement {
    pub fn encode(&self) -> Vec<u8> {
        codec::encode(self)
    }

    pub fn decode(bytes: &[u8]) -> Result<Self, String> {
        codec::decode("vertical data announcement", bytes).map_err(|e| e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A few rows of the joined file's format (as `scripts/fetch_datasets.py` writes it).
    const JOINED: &str = "# a comment\n\
        wage,education,experience,ethnicity,smsa,region,parttime\n\
        354.94,7,45,cauc,yes,northeast,no\n\
        123.46,12,1,afam,no,south,yes\n\
        900,16,-6,cauc,yes,west,no\n";

    #[test]
    fn a_cps1988_party_keeps_only_its_own_columns() {
        let a = cps1988_block(JOINED, 0).unwrap();
        assert_eq!((a.rows, a.features), (3, 5));
        let b = cps1988_block(JOINED, 1).unwrap();
        assert_eq!((b.rows, b.features), (3, 2));
        assert!(cps1988_block(JOINED, 2).unwrap_err().contains("no party 2"));
        let bad = JOINED.replace("cauc,yes,west", "martian,yes,west");
        let e = cps1988_block(&bad, 0).unwrap_err();
        assert!(e.contains("ethnicity") && e.contains("row 3") && e.contains("martian"), "{e}");
        assert_eq!(VviData::Cps1988.block(1, Some(JOINED)).unwrap(), b);
        assert!(VviData::Cps1988.block(0, None).unwrap_err().contains("not fetched"));
        assert_eq!(VviData::Cps1988.rows(), 28_155);
        assert_eq!(VviData::Cps1988.file(), Some("cps1988.csv"));
    }

    #[test]
    fn the_announced_table_gives_each_party_its_columns_of_the_same_rows() {
        let data = VviData::Generated { rows: 50, seed: 3 };
        let a = data.block(0, None).unwrap();
        assert_eq!((a.rows, a.features), (50, 3));
        assert_eq!(data.block(1, None).unwrap().features, 2);
        assert!(data.block(2, None).is_err());
        assert_eq!(data.file(), None);
        for data in [data, VviData::Cps1988, VviData::Own { rows: 7 }] {
            let msg = DataAnnouncement { study: StudyId([1; 16]), data, twin_seed: 7 };
            assert_eq!(DataAnnouncement::decode(&msg.encode()).unwrap(), msg);
        }
        let whole = public_blocks(&VviData::Cps1988, Some(JOINED)).unwrap().unwrap();
        let test = test_blocks(&whole, &[2, 0]);
        assert_eq!(test.iter().map(|b| (b.rows, b.features)).collect::<Vec<_>>(), [(2, 5), (2, 2)]);
        // The parties' own columns: the schema is CPS1988's, N the form's, and no test rows.
        let own = VviSource::Own.data(300, 9);
        assert_eq!((own, own.rows(), own.file()), (VviData::Own { rows: 300 }, 300, None));
        assert_eq!(own.schema(), cps1988::schema());
        assert_eq!(public_blocks(&own, None).unwrap(), None);
        assert!(own.block(0, None).is_err());
    }
}
