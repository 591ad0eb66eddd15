//! The settings blocks chock-config reads, read here through a whole
//! `Policy::load`: what each file may hold, the refusals' wording and place,
//! and what the rules say about the acts the settings name.

mod lsp;
mod prices;
mod providers;
mod search;
mod servers;
mod skills;
mod style;
