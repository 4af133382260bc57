//! How the last observation's element numbers map to documents: one depth-first order
//! over the top document's elements and those of the cross-origin frames scanned into it
//! (`frames.rs`), each number's home document and its number there. Pure bookkeeping: no
//! CDP, no page.

use chromiumoxide::cdp::browser_protocol::page::FrameId;
use chromiumoxide::cdp::js_protocol::runtime::ExecutionContextId;

use crate::observation::Element;

/// A cross-origin frame scanned by the last observation.
#[derive(Debug, Clone)]
pub(super) struct Frame {
    /// The frame itself (its main world is where its page's timers are counted).
    pub(super) id: FrameId,
    /// The isolated world the scan ran in, where its elements are kept.
    pub(super) context: ExecutionContextId,
    /// The frame whose document holds its iframe element (`None`: the top document).
    pub(super) parent: Option<usize>,
    /// Its iframe element's index in the parent's last scan.
    pub(super) slot: usize,
}

/// Which document an element number lives in and its number there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Home {
    /// Index into [`Numbering::frames`]; `None` for the top document.
    pub(super) frame: Option<usize>,
    pub(super) local: u32,
}

/// How the last observation's element numbers map to documents. Empty when no
/// cross-origin frame was scanned: numbers are then the top document's own.
#[derive(Debug, Default)]
pub(crate) struct Numbering {
    pub(super) frames: Vec<Frame>,
    pub(super) homes: Vec<Home>,
}

/// One scanned document and the cross-origin frames spliced into it.
struct Doc {
    elements: Vec<Element>,
    kids: Vec<Kid>,
}

pub(super) struct Kid {
    at: usize,
    frame: usize,
    doc: Doc,
}

/// Lists every document's elements in one depth-first order, a frame's where its hole is,
/// numbers them 1.. in that order, and records where each number lives.
fn flatten(doc: Doc, frame: Option<usize>, elements: &mut Vec<Element>, homes: &mut Vec<Home>) {
    let mut kids = doc.kids.into_iter().peekable();
    for (i, e) in doc.elements.into_iter().enumerate() {
        while let Some(kid) = kids.next_if(|k| k.at <= i) {
            flatten(kid.doc, Some(kid.frame), elements, homes);
        }
        homes.push(Home {
            frame,
            local: i as u32 + 1,
        });
        elements.push(e);
    }
    for kid in kids {
        flatten(kid.doc, Some(kid.frame), elements, homes);
    }
}

/// The numbered list and its numbering for a top document and the frames scanned in it.
pub(super) fn splice(
    top: Vec<Element>,
    kids: Vec<Kid>,
    frames: Vec<Frame>,
) -> (Vec<Element>, Numbering) {
    if frames.is_empty() {
        return (top, Numbering::default());
    }
    let mut elements = Vec::new();
    let mut homes = Vec::new();
    flatten(
        Doc {
            elements: top,
            kids,
        },
        None,
        &mut elements,
        &mut homes,
    );
    for (i, e) in elements.iter_mut().enumerate() {
        e.id = i as u32 + 1;
    }
    (elements, Numbering { frames, homes })
}

/// The scanned frames whose iframe sits in `parent`'s document, as a tree (frames of one
/// document are in their holes' order: they were scanned in it).
pub(super) fn kids_of(
    parent: Option<usize>,
    frames: &[Frame],
    docs: &mut [Option<(usize, Vec<Element>)>],
) -> Vec<Kid> {
    let mut kids = Vec::new();
    for (i, f) in frames.iter().enumerate() {
        if f.parent != parent {
            continue;
        }
        let Some((at, elements)) = docs[i].take() else {
            continue;
        };
        kids.push(Kid {
            at,
            frame: i,
            doc: Doc {
                elements,
                kids: kids_of(Some(i), frames, docs),
            },
        });
    }
    kids
}

impl Numbering {
    /// Where element `n` lives and its number there. A number past the list stays as it
    /// is: the top document has fewer elements than the list, so its lookup reports that
    /// number gone.
    pub(super) fn home(&self, n: u32) -> Home {
        n.checked_sub(1)
            .and_then(|i| self.homes.get(i as usize))
            .copied()
            .unwrap_or(Home {
                frame: None,
                local: n,
            })
    }

    /// The global number of element `local` of frame `frame` (`None`: the top document).
    pub(super) fn global(&self, frame: Option<usize>, local: u32) -> Option<usize> {
        if self.frames.is_empty() {
            return frame.is_none().then_some(local as usize);
        }
        let h = Home { frame, local };
        self.homes.iter().position(|x| *x == h).map(|i| i + 1)
    }

    /// The isolated worlds of the scanned frames, by index.
    pub(super) fn contexts(&self) -> impl Iterator<Item = (usize, ExecutionContextId)> + '_ {
        self.frames.iter().enumerate().map(|(i, f)| (i, f.context))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn el(label: &str) -> Element {
        serde_json::from_value(serde_json::json!({
            "id": 0, "tag": "button", "role": "button", "label": label,
            "bbox": {"x": 0, "y": 0, "width": 1, "height": 1}, "in_viewport": true,
        }))
        .unwrap()
    }

    fn frame(parent: Option<usize>, slot: usize) -> Frame {
        Frame {
            id: FrameId::new(format!("F{slot}")),
            context: ExecutionContextId::new(100 + slot as i64),
            parent,
            slot,
        }
    }

    #[test]
    fn frames_are_spliced_in_where_they_sit_and_numbers_map_back() {
        // Top: A, [frame 0: X, [frame 2: Z], Y], B, [frame 1: W] at the end; frames are
        // indexed a level at a time, as they are scanned.
        let frames = vec![frame(None, 0), frame(None, 1), frame(Some(0), 0)];
        let mut docs = vec![
            Some((1, vec![el("X"), el("Y")])),
            Some((2, vec![el("W")])),
            Some((1, vec![el("Z")])),
        ];
        let kids = kids_of(None, &frames, &mut docs);
        let (els, numbering) = splice(vec![el("A"), el("B")], kids, frames);
        let order: Vec<(&str, u32)> = els.iter().map(|e| (e.label.as_str(), e.id)).collect();
        assert_eq!(
            order,
            vec![("A", 1), ("X", 2), ("Z", 3), ("Y", 4), ("B", 5), ("W", 6)]
        );
        let homes: Vec<(Option<usize>, u32)> = (1..=6)
            .map(|n| numbering.home(n))
            .map(|h| (h.frame, h.local))
            .collect();
        assert_eq!(
            homes,
            vec![
                (None, 1),
                (Some(0), 1),
                (Some(2), 1),
                (Some(0), 2),
                (None, 2),
                (Some(1), 1)
            ]
        );
        assert_eq!(
            numbering.home(7),
            Home {
                frame: None,
                local: 7
            },
            "past the list: the top's own lookup finds nothing"
        );
        assert_eq!(numbering.home(0).local, 0);
        assert_eq!(numbering.global(Some(2), 1), Some(3));
        assert_eq!(numbering.global(None, 2), Some(5));
        assert_eq!(numbering.global(Some(1), 2), None);
    }

    #[test]
    fn without_frames_numbers_are_the_top_documents() {
        let (els, numbering) = splice(vec![el("A")], vec![], vec![]);
        assert_eq!(els[0].id, 0, "left as the scan numbered them");
        assert_eq!(
            numbering.home(7),
            Home {
                frame: None,
                local: 7
            }
        );
        assert_eq!(numbering.global(None, 4), Some(4));
        assert_eq!(numbering.global(Some(0), 1), None);
    }
}
