//! hashDerivationModulo and the output paths it gives.
//!
//! A derivation's input-addressed output paths come from a hash of its
//! ATerm in which every input `.drv` path is replaced by that input's own
//! hash modulo. A fixed-output input short-circuits: its hash covers only
//! its output hash and path, so changing a URL does not change anything
//! downstream.

use std::collections::{BTreeMap, HashMap, HashSet};

use super::aterm::ModuloInputs;
use super::{Derivation, DerivationError, DerivationKind, DerivationOutput};
use crate::hash::Hash;
use crate::store_path::{self, StorePath};

/// Whether a derivation's hash can give output paths yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DrvHashKind {
    /// Statically known output paths.
    Regular,
    /// Depends on a content-addressed or impure derivation: paths are known
    /// only after building.
    Deferred,
}

/// The result of hashDerivationModulo: one hash per output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DrvHash {
    pub hashes: BTreeMap<String, Hash>,
    pub kind: DrvHashKind,
}

/// Memoised hashes modulo of `.drv` files, keyed by their store path.
///
/// An evaluator inserts each derivation's hash as it writes it; a closure
/// walk lets [`DrvHashes::hash_modulo`] load missing inputs through its
/// `load` function. Deep chains are walked without recursion.
#[derive(Debug, Default, Clone)]
pub struct DrvHashes {
    known: HashMap<StorePath, DrvHash>,
}

impl DrvHashes {
    pub fn new() -> DrvHashes {
        DrvHashes::default()
    }

    /// Records the hash (computed with `mask_outputs = false`) of the `.drv` at `drv_path`.
    pub fn insert(&mut self, drv_path: StorePath, hash: DrvHash) {
        self.known.insert(drv_path, hash);
    }

    pub fn get(&self, drv_path: &StorePath) -> Option<&DrvHash> {
        self.known.get(drv_path)
    }

    /// hashDerivationModulo of `drv`. Inputs not yet known are read with
    /// `load` and remembered.
    pub fn hash_modulo(
        &mut self,
        drv: &Derivation,
        mask_outputs: bool,
        load: &mut dyn FnMut(&StorePath) -> Result<Derivation, DerivationError>,
    ) -> Result<DrvHash, DerivationError> {
        self.load_inputs(drv, load)?;
        self.compute(drv, mask_outputs)
    }

    /// Like [`DrvHashes::hash_modulo`] with unmasked outputs, remembering the result under `drv_path`.
    pub fn hash_of_path(
        &mut self,
        drv_path: &StorePath,
        load: &mut dyn FnMut(&StorePath) -> Result<Derivation, DerivationError>,
    ) -> Result<DrvHash, DerivationError> {
        if let Some(h) = self.known.get(drv_path) {
            return Ok(h.clone());
        }
        let drv = load(drv_path)?;
        let hash = self.hash_modulo(&drv, false, load)?;
        self.known.insert(drv_path.clone(), hash.clone());
        Ok(hash)
    }

    /// Depth-first, post-order loading of every input whose hash is unknown.
    fn load_inputs(
        &mut self,
        drv: &Derivation,
        load: &mut dyn FnMut(&StorePath) -> Result<Derivation, DerivationError>,
    ) -> Result<(), DerivationError> {
        let mut stack: Vec<(StorePath, Derivation)> = Vec::new();
        let mut on_stack: HashSet<StorePath> = HashSet::new();
        let pending = |known: &HashMap<StorePath, DrvHash>, d: &Derivation| {
            d.input_drvs
                .keys()
                .find(|p| !known.contains_key(*p))
                .cloned()
        };
        let mut next = pending(&self.known, drv);
        loop {
            if let Some(path) = next.take() {
                if !on_stack.insert(path.clone()) {
                    return Err(DerivationError::Cycle {
                        drv: path.to_string(),
                    });
                }
                let input = load(&path)?;
                stack.push((path, input));
            } else {
                let Some((path, input)) = stack.pop() else {
                    return Ok(());
                };
                let hash = self.compute(&input, false)?;
                on_stack.remove(&path);
                self.known.insert(path, hash);
            }
            next = match stack.last() {
                Some((_, top)) => pending(&self.known, top),
                None => pending(&self.known, drv),
            };
        }
    }

    /// hashDerivationModulo with every input's hash already known.
    fn compute(&self, drv: &Derivation, mask_outputs: bool) -> Result<DrvHash, DerivationError> {
        let mut kind = DrvHashKind::Regular;
        match drv.kind()? {
            DerivationKind::FixedOutput => return fixed_output_hashes(drv),
            DerivationKind::Impure => {
                let impure = Hash::sha256("impure");
                return Ok(DrvHash {
                    hashes: drv.outputs.keys().map(|o| (o.clone(), impure)).collect(),
                    kind: DrvHashKind::Deferred,
                });
            }
            DerivationKind::Floating => kind = DrvHashKind::Deferred,
            DerivationKind::InputAddressed | DerivationKind::DeferredInputAddressed => {}
        }
        let mut inputs = ModuloInputs::new();
        for (path, outputs) in &drv.input_drvs {
            let Some(input) = self.known.get(path) else {
                return Err(DerivationError::MissingInputOutput {
                    name: drv.name.clone(),
                    input: path.to_string(),
                    output: "(its hash was not computed)".to_owned(),
                });
            };
            if input.kind == DrvHashKind::Deferred {
                kind = DrvHashKind::Deferred;
            }
            for output in outputs {
                let h = input.hashes.get(output).ok_or_else(|| {
                    DerivationError::MissingInputOutput {
                        name: drv.name.clone(),
                        input: path.to_string(),
                        output: output.clone(),
                    }
                })?;
                inputs
                    .entry(h.to_base16())
                    .or_default()
                    .insert(output.clone());
            }
        }
        let mut text = String::new();
        drv.write_aterm(&mut text, mask_outputs, Some(&inputs));
        let hash = Hash::sha256(text);
        Ok(DrvHash {
            hashes: drv.outputs.keys().map(|o| (o.clone(), hash)).collect(),
            kind,
        })
    }
}

/// The short-circuit: `sha256("fixed:out:<[r:]algo>:<hex>:<out path>")`.
fn fixed_output_hashes(drv: &Derivation) -> Result<DrvHash, DerivationError> {
    let mut hashes = BTreeMap::new();
    for (name, output) in &drv.outputs {
        let DerivationOutput::CaFixed(fixed) = output else {
            continue;
        };
        let path = drv
            .output_path(name)?
            .map(|p| p.to_string())
            .unwrap_or_default();
        let fingerprint = format!(
            "fixed:out:{}:{}:{path}",
            fixed.method_algo(),
            fixed.hash.to_base16()
        );
        hashes.insert(name.clone(), Hash::sha256(fingerprint));
    }
    Ok(DrvHash {
        hashes,
        kind: DrvHashKind::Regular,
    })
}

impl Derivation {
    /// Fills in input-addressed output paths and their env entries, as
    /// `derivationStrict` does for a derivation that is not fixed-output:
    /// each output is blanked, the masked hash modulo taken, and each path
    /// computed from it. Returns the paths by output name.
    pub fn fill_in_output_paths(
        &mut self,
        hashes: &mut DrvHashes,
        load: &mut dyn FnMut(&StorePath) -> Result<Derivation, DerivationError>,
    ) -> Result<BTreeMap<String, StorePath>, DerivationError> {
        let names: Vec<String> = self.outputs.keys().cloned().collect();
        for name in &names {
            self.env.insert(name.clone(), String::new());
            self.outputs
                .insert(name.clone(), DerivationOutput::Deferred);
        }
        let hash = hashes.hash_modulo(self, true, load)?;
        let mut paths = BTreeMap::new();
        if hash.kind == DrvHashKind::Deferred {
            return Ok(paths);
        }
        for name in names {
            let Some(h) = hash.hashes.get(&name) else {
                continue;
            };
            let path = store_path::make_output_path(&name, h, &self.name)
                .map_err(DerivationError::BadName)?;
            self.env.insert(name.clone(), path.to_string());
            self.outputs
                .insert(name.clone(), DerivationOutput::InputAddressed(path.clone()));
            paths.insert(name, path);
        }
        Ok(paths)
    }

    /// Checks what the daemon checks when a `.drv` is registered
    /// (`checkDerivationOutputs`): each input-addressed output is at the path
    /// hashDerivationModulo gives, and `$output` in the env names it.
    pub fn check_output_paths(
        &self,
        hashes: &mut DrvHashes,
        load: &mut dyn FnMut(&StorePath) -> Result<Derivation, DerivationError>,
    ) -> Result<(), DerivationError> {
        let kind = self.kind()?;
        let masked = match kind {
            DerivationKind::InputAddressed => Some(hashes.hash_modulo(self, true, load)?),
            _ => None,
        };
        for (name, output) in &self.outputs {
            let expected = match (output, &masked) {
                (DerivationOutput::InputAddressed(stated), Some(h)) => {
                    let hash = h.hashes.get(name).ok_or_else(|| DerivationError::BadKind {
                        name: self.name.clone(),
                        problem: format!("no hash for output {name}"),
                    })?;
                    let computed = store_path::make_output_path(name, hash, &self.name)
                        .map_err(DerivationError::BadName)?;
                    if &computed != stated {
                        return Err(DerivationError::WrongOutputPath {
                            name: self.name.clone(),
                            output: name.clone(),
                            stated: stated.to_string(),
                            computed: computed.to_string(),
                        });
                    }
                    computed
                }
                (DerivationOutput::CaFixed(_), _) => match self.output_path(name)? {
                    Some(p) => p,
                    None => continue,
                },
                _ => continue,
            };
            let stated = self.env.get(name).map(String::as_str).unwrap_or("");
            if stated != expected.to_string() {
                return Err(DerivationError::WrongOutputEnv {
                    name: self.name.clone(),
                    output: name.clone(),
                    stated: stated.to_owned(),
                    expected: expected.to_string(),
                });
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hash::HashAlgo;
    use crate::store_path::{FileIngestionMethod, FixedOutputHash};

    /// A loader that reads derivations from a map, as if from a store.
    fn from_map(
        by_path: &HashMap<StorePath, Derivation>,
    ) -> impl FnMut(&StorePath) -> Result<Derivation, DerivationError> + '_ {
        |p| {
            by_path
                .get(p)
                .cloned()
                .ok_or_else(|| DerivationError::NotADerivation {
                    path: p.to_string(),
                })
        }
    }

    fn no_loads(p: &StorePath) -> Result<Derivation, DerivationError> {
        Err(DerivationError::NotADerivation {
            path: p.to_string(),
        })
    }

    fn v1_fod() -> Derivation {
        let mut d = Derivation::new("source");
        d.platform = "x86_64-linux".into();
        d.builder = "/bin/first".into();
        d.set_fixed_output(FixedOutputHash {
            method: FileIngestionMethod::Recursive,
            hash: Hash::decode(
                HashAlgo::Sha256,
                "894517c9163c896ec31a2adbd33c0681fd5f45b2c0ef08a64c92a03fb97f390f",
            )
            .unwrap(),
        })
        .unwrap();
        d
    }

    #[test]
    fn v2_fixed_output_short_circuit() {
        let h = DrvHashes::new()
            .hash_modulo(&v1_fod(), false, &mut no_loads)
            .unwrap();
        assert_eq!(
            h.hashes["out"].to_base16(),
            "42cfa58bf5a281911b6c9471c67cf64f70a820b033415190db3da91710c5ff2c"
        );
    }

    #[test]
    fn v7_flat_hash_modulo() {
        let mut d = Derivation::new("bar");
        d.platform = "x86_64-linux".into();
        d.builder = "none".into();
        for (k, v) in [
            ("builder", "none"),
            ("name", "bar"),
            ("outputHashAlgo", "sha256"),
            ("outputHashMode", "flat"),
            ("system", "x86_64-linux"),
        ] {
            d.env.insert(k.into(), v.into());
        }
        let hash = Hash::sha256("mycontent\n");
        d.env.insert("outputHash".into(), hash.to_base16());
        d.set_fixed_output(FixedOutputHash {
            method: FileIngestionMethod::Flat,
            hash,
        })
        .unwrap();
        let h = DrvHashes::new()
            .hash_modulo(&d, false, &mut no_loads)
            .unwrap();
        assert_eq!(
            h.hashes["out"].to_base16(),
            "dee6f3f1877f934ebb02f67890c5a6283e5f9a6598c5bf53d14e32f35586a7a9"
        );
        assert_eq!(
            d.drv_path().unwrap().to_string(),
            "/nix/store/ymsf5zcqr9wlkkqdjwhqllgwa97rff5i-bar.drv"
        );
        d.check_output_paths(&mut DrvHashes::new(), &mut no_loads)
            .unwrap();
    }

    #[test]
    fn v6_only_existing_env_keys_are_blanked() {
        for (doc, name, with_env, expected) in [
            (
                "Fill in deferred output with empty env var",
                "filled-in-deferred-empty-env-var",
                true,
                "/nix/store/bilpz1nq8qi9r3bzsp72n34yjgqg43ws-filled-in-deferred-empty-env-var",
            ),
            (
                "Fill in deferred with missing env var",
                "filled-in-deferred-no-env-var",
                false,
                "wpk9qrgg77fyswhailap0gicgw98izx9-filled-in-deferred-no-env-var",
            ),
        ] {
            let mut d = Derivation::new(name);
            d.platform = "x86_64-linux".into();
            d.builder = "/bin/sh".into();
            d.env.insert("__doc".into(), doc.into());
            if with_env {
                d.env.insert("out".into(), String::new());
            }
            d.outputs.insert("out".into(), DerivationOutput::Deferred);
            let h = DrvHashes::new()
                .hash_modulo(&d, true, &mut no_loads)
                .unwrap();
            let path = store_path::make_output_path("out", &h.hashes["out"], name).unwrap();
            assert!(path.to_string().ends_with(expected), "{path}");
        }
    }

    /// The graph of Nix's hash-modulo fixtures: a V1 fixed-output source,
    /// an intermediate depending on it, and a parent merging two outputs.
    #[test]
    fn v3_v4_v5_chain() {
        let source = v1_fod();
        let source_path = source.drv_path().unwrap();
        assert_eq!(
            source_path.to_string(),
            "/nix/store/q4mzjdlh5px6977h7v5fdsk1p33yg583-source.drv"
        );

        let mut mid = Derivation::new("intermediate");
        mid.platform = "x86_64-linux".into();
        mid.builder = "/bin/intermediate".into();
        mid.input_drvs
            .insert(source_path.clone(), ["out".to_owned()].into());
        mid.outputs.insert("dev".into(), DerivationOutput::Deferred);
        mid.outputs.insert("out".into(), DerivationOutput::Deferred);
        let mut hashes = DrvHashes::new();
        let mut load = |p: &StorePath| {
            if *p == source_path {
                Ok(source.clone())
            } else {
                no_loads(p)
            }
        };
        let masked = hashes.hash_modulo(&mid, true, &mut load).unwrap();
        let out =
            store_path::make_output_path("out", &masked.hashes["out"], "intermediate").unwrap();
        let dev =
            store_path::make_output_path("dev", &masked.hashes["dev"], "intermediate").unwrap();
        assert_eq!(out.hash_part(), "jlzxv2xpqj0adi22cy93573vyf9xr6fw");
        assert_eq!(
            dev.to_string(),
            "/nix/store/xgskw9kbh807ah56r4f4kxdh0fa1i0ip-intermediate-dev"
        );

        mid.env.insert("dev".into(), dev.to_string());
        mid.env.insert("out".into(), out.to_string());
        mid.outputs
            .insert("dev".into(), DerivationOutput::InputAddressed(dev));
        mid.outputs
            .insert("out".into(), DerivationOutput::InputAddressed(out));
        assert_eq!(
            mid.drv_path().unwrap().to_string(),
            "/nix/store/f8g8x4m83da3b2f79iv84q2r3qlc58lr-intermediate.drv"
        );
        let unmasked = hashes.hash_modulo(&mid, false, &mut load).unwrap();
        assert_eq!(
            unmasked.hashes["out"].to_base16(),
            "6df335a6cafec6b08aa38163a4a3d1b8f04bc8dc10de4ad35d677f911f2d3b5a"
        );

        // With env entries for the outputs (as Nix's evaluator always writes), blanking applies.
        let h = DrvHashes::new().hash_modulo(&mid, true, &mut load).unwrap();
        let p = store_path::make_output_path("out", &h.hashes["out"], "intermediate").unwrap();
        assert_eq!(p.hash_part(), "9y9d7gv85dkhgy5k13cvss5bmbvc4hjm");
    }

    /// Two inputs with the same hash modulo (their fixed-output sources
    /// differ only in builder) merge into one entry of the modulo ATerm.
    #[test]
    fn equal_input_hashes_merge() {
        let mut by_path: HashMap<StorePath, Derivation> = HashMap::new();
        let mut intermediates = Vec::new();
        for builder in ["/bin/first", "/bin/second"] {
            let mut source = v1_fod();
            source.builder = builder.into();
            let source_path = source.drv_path().unwrap();
            by_path.insert(source_path.clone(), source);
            let mut mid = Derivation::new("intermediate");
            mid.platform = "x86_64-linux".into();
            mid.builder = "/bin/intermediate".into();
            mid.input_drvs
                .insert(source_path, ["out".to_owned()].into());
            mid.outputs.insert("dev".into(), DerivationOutput::Deferred);
            mid.outputs.insert("out".into(), DerivationOutput::Deferred);
            let mid_path = mid.drv_path().unwrap();
            by_path.insert(mid_path.clone(), mid);
            intermediates.push(mid_path);
        }
        assert_ne!(intermediates[0], intermediates[1]);
        let mut parent = Derivation::new("parent");
        parent.builder = "/bin/parent".into();
        parent
            .outputs
            .insert("out".into(), DerivationOutput::Deferred);
        parent
            .input_drvs
            .insert(intermediates[0].clone(), ["out".to_owned()].into());
        parent
            .input_drvs
            .insert(intermediates[1].clone(), ["dev".to_owned()].into());
        let mut hashes = DrvHashes::new();
        let mut load = from_map(&by_path);
        hashes.hash_modulo(&parent, false, &mut load).unwrap();
        let first = &hashes.get(&intermediates[0]).unwrap().hashes["out"];
        assert_eq!(first, &hashes.get(&intermediates[1]).unwrap().hashes["dev"]);
        let mut inputs = ModuloInputs::new();
        inputs
            .entry(first.to_base16())
            .or_default()
            .extend(["dev".to_owned(), "out".to_owned()]);
        let mut expected = String::new();
        parent.write_aterm(&mut expected, false, Some(&inputs));
        assert!(expected.contains(&format!("[(\"{}\",[\"dev\",\"out\"])]", first.to_base16())));
        let computed = hashes.hash_modulo(&parent, false, &mut load).unwrap();
        assert_eq!(computed.hashes["out"], Hash::sha256(expected));
    }

    #[test]
    fn deep_chains_do_not_recurse() {
        let mut by_path: HashMap<StorePath, Derivation> = HashMap::new();
        let mut hashes = DrvHashes::new();
        let mut previous: Option<StorePath> = None;
        let mut last = Derivation::new("none");
        for i in 0..20_000 {
            let mut d = Derivation::new(format!("link{i}"));
            d.builder = "/bin/sh".into();
            d.outputs.insert("out".into(), DerivationOutput::Deferred);
            if let Some(p) = previous.take() {
                d.input_drvs.insert(p, ["out".to_owned()].into());
            }
            d.fill_in_output_paths(&mut hashes, &mut no_loads).unwrap();
            let path = d.drv_path().unwrap();
            let h = hashes.hash_modulo(&d, false, &mut no_loads).unwrap();
            hashes.insert(path.clone(), h);
            by_path.insert(path.clone(), d.clone());
            previous = Some(path);
            last = d;
        }
        let mut load = from_map(&by_path);
        let mut fresh = DrvHashes::new();
        last.check_output_paths(&mut fresh, &mut load).unwrap();
        assert_eq!(fresh.known.len(), 19_999);
    }
}
