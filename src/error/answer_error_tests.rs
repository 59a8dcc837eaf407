use super::*;

#[test]
fn answer_error_codes() {
    crate::error::code_tables::table(&[(AnswerError::Lost, -1)]);
}
